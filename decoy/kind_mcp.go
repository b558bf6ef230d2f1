package decoy

// WhereMCPTool is a placement in an MCP tool definition or a tool's answer.
const WhereMCPTool = "mcp_tool"

// mcpKind is a decoy MCP server (mcp.go): a GET gets its description, a POST JSON-RPC
// (HandleMCP), on MCP's transports the listener serves.
type mcpKind struct{}

func init() { register(mcpKind{}) }

func (mcpKind) About() About {
	return About{Name: "mcp", Help: "a decoy MCP server", Order: 60, Format: FormatJSON, Listed: true,
		Wheres: map[string]string{WhereMCPTool: "an MCP tool definition"}, Stems: []string{
			"/mcp/", "/.well-known/mcp/", "/api/mcp/",
		}}
}

func (mcpKind) render(r *renderer) Rendered { return r.mcpInfo() }
func (mcpKind) lureTarget()                 {}

func (mcpKind) answer(key Key, spec Spec, hitID string, body []byte) MCPResult {
	return HandleMCP(key, spec, hitID, body)
}

// placedOnly: a tools/list answer holds the tools, and credentials in their arguments.
func (mcpKind) placedOnly() map[Purpose]string {
	return map[Purpose]string{Tool: WhereMCPTool, Credential: WhereMCPTool}
}
