// The decoy MCP server reached by the official MCP TypeScript SDK (@modelcontextprotocol/sdk):
// an older client on the legacy HTTP+SSE transport (SSEClientTransport) lists and calls the
// decoy tools, and the session it leaves is judged as the Go corpus judges one; a current
// client on Streamable HTTP reaches the same tools.
// Needs FLYTRAP_URL, FLYTRAP_KEY (read-write or admin) and FLYTRAP_TRAP_URL (the trap listener).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = process.env.FLYTRAP_URL;
const key = process.env.FLYTRAP_KEY;
const trapURL = process.env.FLYTRAP_TRAP_URL;

async function gql(query, variables) {
  const res = await fetch(url + '/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer ' + key },
    body: JSON.stringify({ query, variables }),
  });
  const out = await res.json();
  assert.equal(out.errors, undefined, JSON.stringify(out.errors));
  return out.data;
}

// Each client comes from its own address (the trap listener trusts X-Forwarded-For from
// loopback only when told to; here every client is 127.0.0.1, so each uses its own user agent).
function withUA(ua) {
  return (input, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set('user-agent', ua);
    return fetch(input, { ...init, headers });
  };
}

// sessionOf is the sessions of ua once done(sessions) holds, or as they are after 10 s: the trap
// listener answers a hit once it is journaled and stores it (sessionized, classified) moments
// later (docs/architecture.md, "The hit path"), so a read right after the answer may be early.
async function sessionOf(ua, done = (ss) => ss.length > 0) {
  for (const deadline = Date.now() + 10000; ; await new Promise((r) => setTimeout(r, 100))) {
    const data = await gql(`{ sessions(first: 10) { edges { node {
      userAgent classification severity signalsFired signals { name tripwire } } } } }`);
    const ss = data.sessions.edges.map((e) => e.node).filter((s) => s.userAgent === ua);
    if (done(ss) || Date.now() > deadline) return ss;
  }
}

test('setup: an MCP trap', async () => {
  await gql('mutation { createTrap(input: {name: "Internal tools", type: mcp, path: "/mcp"}) { id } }');
});

test('legacy HTTP+SSE client (SSEClientTransport) lists and calls the decoy tools', async () => {
  const ua = 'legacy-mcp-client/0.9';
  const fetchUA = withUA(ua);
  const transport = new SSEClientTransport(new URL(trapURL + '/mcp'), {
    eventSourceInit: { fetch: fetchUA },
    fetch: fetchUA,
  });
  const client = new Client({ name: 'legacy-client', version: '0.9.0' });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.length >= 3, `tools: ${JSON.stringify(tools)}`);
    const tool = tools.find((t) => t.name === 'export_secrets');
    assert.ok(tool, 'export_secrets is listed');
    const ref = tool.inputSchema.properties.authorization_ref.default;
    assert.match(ref, /^[a-z2-7]{16,}$/);
    const res = await client.callTool({ name: tool.name, arguments: { path: 'secret/prod', authorization_ref: ref } });
    assert.equal(res.isError, false);
    assert.match(res.content[0].text, /"secrets"/);
  } finally {
    await client.close();
  }
  const sessions = await sessionOf(ua, (ss) => ss.length === 1 && ss[0].signalsFired.includes('TOOL_INVOKED'));
  assert.equal(sessions.length, 1, JSON.stringify(sessions));
  const [s] = sessions;
  // A program calling a decoy tool without any AI evidence: a malicious BOT, high.
  assert.equal(s.classification, 'BOT');
  assert.equal(s.severity, 'high');
  assert.ok(s.signalsFired.includes('TOOL_INVOKED'), s.signalsFired.join(','));
  assert.ok(s.signals.some((g) => g.name === 'TOOL_INVOKED' && g.tripwire));
});

test('an AI coding agent on the legacy transport is AI_AGENT_MALICIOUS', async () => {
  const ua = 'claude-code/1.0.51 (external, cli)';
  const fetchUA = withUA(ua);
  const transport = new SSEClientTransport(new URL(trapURL + '/mcp'), { eventSourceInit: { fetch: fetchUA }, fetch: fetchUA });
  const client = new Client({ name: 'agent', version: '1.0.0' });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    const tool = tools[0];
    await client.callTool({ name: tool.name, arguments: { query: 'plan:enterprise', authorization_ref: tool.inputSchema.properties.authorization_ref.default } });
  } finally {
    await client.close();
  }
  const [s] = await sessionOf(ua, (ss) => ss[0]?.classification === 'AI_AGENT_MALICIOUS');
  assert.equal(s.classification, 'AI_AGENT_MALICIOUS');
  assert.equal(s.severity, 'critical');
});

test('a Streamable HTTP client reaches the same tools (its stream GET is refused with 405)', async () => {
  const ua = 'streamable-mcp-client/1.0';
  const transport = new StreamableHTTPClientTransport(new URL(trapURL + '/mcp'), { fetch: withUA(ua) });
  const client = new Client({ name: 'streamable-client', version: '1.0.0' });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'run_shell'));
  } finally {
    await client.close();
  }
});
