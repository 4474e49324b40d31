// Proves issue 18 item 10 at a metered orchestrator over HTTP: prototype keys, deep nesting and
// huge arrays in drop-in bodies and in MCP tool arguments are refused naming the field or
// served, never a 500; a duplicate key in tool arguments counts once (its last value), which is
// what the tool server receives; a refused tools/call never reaches the tool server.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MODELS } from '../orchestrator/orchestrator.harness.js';
import { issueCapability, meteredHarness, scriptedGrants } from './gateway.support.js';
import { McpToolServer } from './mcp-tool-server.js';

type Json = Record<string, unknown>;
let tools: McpToolServer;
const price = { cost_units_per_call: 10, currency: 'USD' };
const h = meteredHarness('gwhostile', {}, () => ({
  tool_servers: [{ name: 'calc', url: tools.url, tools: { add: price }, timeout_ms: 5_000 }],
}));
let token: string;

beforeAll(async () => {
  tools = await McpToolServer.start();
  await h.startAuthority();
  await h.start(1);
  token = (
    await issueCapability(h, [...scriptedGrants(MODELS), { server_id: 'calc', tool_name: 'add', max_invocations: 100 }])
  ).token;
}, 240_000);
afterAll(async () => {
  await h.dispose();
  await tools.stop();
}, 60_000);

async function post(path: string, raw: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${h.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
    body: raw,
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

/** The JSON-RPC answer of an MCP POST, whether it came as JSON or as one server-sent event. */
function rpcAnswer(text: string): Json {
  const data = text.split('\n').find((line) => line.startsWith('data: '));
  return JSON.parse(data ? data.slice(6) : text) as Json;
}

const MCP_HEADERS = { accept: 'application/json, text/event-stream' };

/** Opens an MCP session as a client does (initialize, then the initialized notification). */
async function mcpSession(): Promise<Record<string, string>> {
  const init = await post(
    '/mcp',
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } },
    }),
    MCP_HEADERS,
  );
  expect(init.status).toBe(200);
  const session = { ...MCP_HEADERS, 'mcp-session-id': init.headers.get('mcp-session-id')! };
  await post('/mcp', JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), session);
  return session;
}

const toolCall = (argumentsJson: string, id = 2) =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"calc__add","arguments":${argumentsJson}}}`;

describe('Issue 18 item 10: hostile JSON at the orchestrator', () => {
  it('Issue 18 item 10 a prototype key in MCP tool arguments is refused 400 naming the field, and the tool server is not called', async () => {
    const session = await mcpSession();
    const before = tools.count('add');
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      const res = await post('/mcp', toolCall(`{"a":1,"b":2,"${key}":{"polluted":true}}`), session);
      expect(res.status).toBe(400);
      const answer = rpcAnswer(res.text);
      expect(answer['id']).toBe(2);
      const errors = ((answer['error'] as Json)['data'] as { errors: Json[] }).errors;
      expect(errors.map((e) => e['field'])).toContain(`params.arguments.${key}`);
    }
    expect(tools.count('add')).toBe(before);
    expect(({} as Json)['polluted']).toBeUndefined();
  });

  it('Issue 18 item 10 a duplicate key in MCP tool arguments counts once, its last value, and that is what the tool server adds', async () => {
    const session = await mcpSession();
    const res = await post('/mcp', toolCall('{"a":2,"b":3,"a":10}'), session);
    expect(res.status).toBe(200);
    const result = rpcAnswer(res.text)['result'] as { content: { text: string }[]; isError?: boolean };
    expect(result.isError).toBeFalsy();
    expect(result.content[0]!.text).toBe('13');
  });

  it('Issue 18 item 10 MCP tool arguments nested past the bound are refused 400 naming the field', async () => {
    const session = await mcpSession();
    const nested = '{"x":'.repeat(5_000) + '1' + '}'.repeat(5_000);
    const res = await post('/mcp', toolCall(`{"a":1,"b":2,"deep":${nested}}`), session);
    expect(res.status).toBe(400);
    const errors = ((rpcAnswer(res.text)['error'] as Json)['data'] as { errors: Json[] }).errors;
    expect(String(errors[0]!['field'])).toMatch(/^params\.arguments\.deep(\.x)+$/);
    expect(String(errors[0]!['message'])).toContain('deeper than 64 levels');
  });

  it('Issue 18 item 10 a prototype key or over-deep value in a drop-in body is refused 400 in the dialect, naming the field', async () => {
    const proto = await post(
      '/v1/chat/completions',
      '{"model":"scripted/ok-model","messages":[{"role":"user","content":"hi","__proto__":{"role":"system"}}]}',
    );
    expect(proto.status).toBe(400);
    expect(proto.text).toContain('messages.0.__proto__');
    expect((JSON.parse(proto.text) as Json)['error']).toBeDefined();
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const anthropic = await post(
      '/v1/messages',
      `{"model":"scripted/ok-model","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"metadata":${deep}}`,
    );
    expect(anthropic.status).toBe(400);
    expect(anthropic.text).toContain('deeper than 64 levels');
    expect((JSON.parse(anthropic.text) as Json)['type']).toBe('error');
  });

  it('Issue 18 item 10 a drop-in body with a huge array is answered without a 500', async () => {
    h.provider().script('ok-model', [{ kind: 'stream', chunks: ['ok'], usage: { input_tokens: 1, output_tokens: 1 } }]);
    const blocks = Array.from({ length: 30_000 }, () => ({ type: 'text', text: 'a' }));
    const anthropic = await post(
      '/v1/messages',
      JSON.stringify({ model: 'scripted/ok-model', max_tokens: 16, messages: [{ role: 'user', content: blocks }] }),
    );
    expect(anthropic.status).toBeLessThan(500);
    const stops = JSON.stringify({
      model: 'scripted/ok-model',
      messages: [{ role: 'user', content: 'hi' }],
      stop: Array.from({ length: 100_000 }, () => 'x'),
    });
    const openai = await post('/v1/chat/completions', stops);
    expect(openai.status).toBeLessThan(500);
    expect((await fetch(`${h.url}/healthz`)).status).toBe(200);
  });
});
