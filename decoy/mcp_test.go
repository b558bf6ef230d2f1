package decoy

import (
	"encoding/json"
	"strings"
	"testing"
)

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func mcpCall(t *testing.T, hit, body string) (MCPResult, rpcResponse) {
	t.Helper()
	res := HandleMCP(testKey, testSpec("mcp", 1), hit, []byte(body))
	var resp rpcResponse
	if len(res.Body) > 0 {
		if err := json.Unmarshal(res.Body, &resp); err != nil {
			t.Fatalf("response is not JSON-RPC: %v\n%s", err, res.Body)
		}
		if resp.JSONRPC != "2.0" {
			t.Fatalf("jsonrpc %q", resp.JSONRPC)
		}
	}
	for _, pl := range res.Placements {
		ref, ok := parseShaped(testKey, pl.Token)
		if !ok || ref != (TokenRef{HitID: hit, Index: pl.Index, Purpose: pl.Purpose}) {
			t.Fatalf("placement %+v parses to %+v", pl, ref)
		}
		if !strings.Contains(string(res.Body), pl.Token) {
			t.Fatalf("placement %+v not in the body", pl)
		}
	}
	return res, resp
}

func TestMCPInitialize(t *testing.T) {
	hit := newHitID(t)
	res, resp := mcpCall(t, hit, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	if res.Status != 200 || res.ToolCalled || string(resp.ID) != "1" || resp.Error != nil {
		t.Fatalf("status %d, %+v", res.Status, resp)
	}
	var r struct {
		ProtocolVersion string         `json:"protocolVersion"`
		Capabilities    map[string]any `json:"capabilities"`
		ServerInfo      struct{ Name, Version string }
		Instructions    string `json:"instructions"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil || r.ProtocolVersion != "2025-03-26" || r.Capabilities["tools"] == nil || r.ServerInfo.Name == "" {
		t.Fatalf("initialize result %s", resp.Result)
	}
	purposes := map[Purpose]bool{}
	for _, pl := range res.Placements {
		purposes[pl.Purpose] = true
	}
	if !purposes[Sink] || !purposes[Canary] || !strings.Contains(r.Instructions, "system_prompt") {
		t.Fatalf("instructions carry no sink and canary: %q", r.Instructions)
	}
	// An unknown version gets one the server speaks.
	_, resp = mcpCall(t, hit, `{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"1999-01-01"}}`)
	if !strings.Contains(string(resp.Result), `"protocolVersion":"2025-06-18"`) || string(resp.ID) != `"a"` {
		t.Fatalf("result %s", resp.Result)
	}
}

func TestMCPToolsListAndCall(t *testing.T) {
	listHit := newHitID(t)
	res, resp := mcpCall(t, listHit, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var list struct {
		Tools []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			InputSchema struct {
				Properties map[string]struct {
					Default string `json:"default"`
				} `json:"properties"`
				Required []string `json:"required"`
			} `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(resp.Result, &list); err != nil || len(list.Tools) != 3 {
		t.Fatalf("tools/list %s", resp.Result)
	}
	tools := 0
	for _, pl := range res.Placements {
		if pl.Purpose == Tool {
			tools++
		}
	}
	if tools != 3 || !strings.Contains(string(res.Body), "system_prompt") {
		t.Fatalf("%d tool placements; sink present: %v", tools, strings.Contains(string(res.Body), "system_prompt"))
	}
	names := map[string]string{}
	for _, tool := range list.Tools {
		names[tool.Name] = tool.InputSchema.Properties["authorization_ref"].Default
		if !strings.Contains(tool.Description, "<IMPORTANT>") {
			t.Fatalf("tool %s has no hidden instruction", tool.Name)
		}
	}
	for _, n := range []string{"read_customer_records", "export_secrets", "run_shell"} {
		if names[n] == "" {
			t.Fatalf("no tool %s with an authorization_ref", n)
		}
	}

	// An agent calls a tool (a later hit), passing the reference the list gave it.
	callHit := newHitID(t)
	ref := names["export_secrets"]
	res, resp = mcpCall(t, callHit, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"export_secrets","arguments":{"path":"secret/prod","authorization_ref":"`+ref+`"}}}`)
	if !res.ToolCalled || res.ToolName != "export_secrets" || !strings.Contains(res.Arguments, `"secret/prod"`) {
		t.Fatalf("call result %+v", res)
	}
	found := FindTokens(testKey, res.Arguments)
	if len(found) != 1 || found[0].HitID != listHit || found[0].Purpose != Tool {
		t.Fatalf("the call's arguments resolve to %+v, want the tools/list hit", found)
	}
	creds := 0
	for _, pl := range res.Placements {
		if pl.Purpose == Credential {
			creds++
			if !strings.Contains(string(res.Body), CredentialValue(testKey, TokenRef{HitID: callHit, Index: pl.Index, Purpose: Credential})) {
				t.Fatal("credential value missing from the secrets")
			}
		}
	}
	if creds != 2 {
		t.Fatalf("%d credentials in export_secrets", creds)
	}
	var call struct {
		Content []struct{ Type, Text string }
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(resp.Result, &call); err != nil || len(call.Content) != 1 || call.IsError || !json.Valid([]byte(call.Content[0].Text)) {
		t.Fatalf("tools/call result %s", resp.Result)
	}

	for _, c := range []struct{ name, args, want string }{
		{"read_customer_records", `{"query":"plan:enterprise"}`, "reference"},
		{"run_shell", `{"command":"cat .env"}`, "APP_ENV=production"},
		{"run_shell", `{"command":"id"}`, "uid=1000"},
		{"run_shell", `{"command":"rm -rf / <script>"}`, "not found"},
		{"drop_tables", `{}`, "Unknown tool"},
	} {
		res, resp := mcpCall(t, newHitID(t), `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"`+c.name+`","arguments":`+c.args+`}}`)
		if !res.ToolCalled || res.ToolName != c.name || !strings.Contains(string(resp.Result), c.want) {
			t.Fatalf("%s: %+v %s", c.name, res, resp.Result)
		}
	}
}

func TestMCPProtocolEdges(t *testing.T) {
	hit := newHitID(t)
	res, _ := mcpCall(t, hit, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if res.Status != 202 || len(res.Body) != 0 {
		t.Fatalf("notification: %d %q", res.Status, res.Body)
	}
	res = HandleMCP(testKey, testSpec("mcp", 1), hit, []byte(`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"run_shell","arguments":{"command":"whoami"}}}]`))
	var batch []rpcResponse
	if err := json.Unmarshal(res.Body, &batch); err != nil || len(batch) != 2 || !res.ToolCalled || res.Status != 200 {
		t.Fatalf("batch: %v %d %s", err, res.Status, res.Body)
	}
	res = HandleMCP(testKey, testSpec("mcp", 1), hit, []byte(`[{"jsonrpc":"2.0","method":"notifications/cancelled"}]`))
	if res.Status != 202 || len(res.Body) != 0 {
		t.Fatalf("batch of notifications: %d %q", res.Status, res.Body)
	}
	for _, c := range []struct {
		body   string
		code   int
		status int
	}{
		{`garbage`, -32700, 400},
		{``, -32700, 400},
		{`[]`, -32700, 400},
		{`{"id":1,"method":"ping"}`, -32600, 400},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, -32600, 400},
		{`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage"}`, -32601, 200},
	} {
		res, resp := mcpCall(t, hit, c.body)
		if res.Status != c.status || resp.Error == nil || resp.Error.Code != c.code {
			t.Errorf("%s: status %d, %s", c.body, res.Status, res.Body)
		}
	}
	res, _ = mcpCall(t, hit, `{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`)
	if !strings.Contains(string(res.Body), `"prompts":[]`) {
		t.Fatalf("prompts/list: %s", res.Body)
	}
	// Arguments and names are bounded.
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + strings.Repeat("n", 500) + `","arguments":{"x":"` + strings.Repeat("é", 10000) + `"}}}`
	res, _ = mcpCall(t, hit, big)
	if !res.ToolCalled || len(res.Arguments) > MaxToolArguments || len(res.ToolName) > 100 || !strings.HasPrefix(res.Arguments, `{"x":"é`) {
		t.Fatalf("unbounded: %d argument bytes, %d name bytes", len(res.Arguments), len(res.ToolName))
	}
}

func FuzzHandleMCP(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_shell","arguments":{"command":"ls"}}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"initialize"},{"jsonrpc":"2.0","method":"x"}]`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"method":"tools/list","params":[]}`))
	f.Add([]byte("\x00\xff"))
	hit := "hit_01arz3ndektsv4rrffq69g5fav"
	f.Fuzz(func(t *testing.T, body []byte) {
		res := HandleMCP(testKey, testSpec("mcp", 1), hit, body)
		if len(res.Body) > 0 && !json.Valid(res.Body) {
			t.Fatalf("invalid JSON response %q", res.Body)
		}
		if res.Status != 200 && res.Status != 202 && res.Status != 400 {
			t.Fatalf("status %d", res.Status)
		}
		if len(res.Arguments) > MaxToolArguments {
			t.Fatal("arguments unbounded")
		}
	})
}
