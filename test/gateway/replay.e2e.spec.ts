// Proves issue 10's replay guarantee: the receipts of drop-in calls (OpenAI and Anthropic
// dialects, streaming and not, with tool calls) and of governed MCP tool calls are
// projections of the work streams, so replaying those streams into an empty database
// rebuilds every receipt byte for byte, and the projected rows digest the same.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { adminHeaders } from '../support/auth.js';
import { MODELS } from '../orchestrator/orchestrator.harness.js';
import { workProjectionDigest } from '../orchestrator/projection-digest.js';
import { issueCapability, meteredHarness, scriptedGrants } from './gateway.support.js';
import { McpToolServer } from './mcp-tool-server.js';

let tools: McpToolServer;
const price = { cost_units_per_call: 10, currency: 'USD' };
const h = meteredHarness('gwreplay', {}, () => ({
  tool_servers: [{ name: 'calc', url: tools.url, tools: { add: price }, timeout_ms: 5_000 }],
}));

beforeAll(async () => {
  tools = await McpToolServer.start();
  await h.startAuthority();
  await h.start(1);
}, 240_000);
afterAll(async () => {
  await h.dispose();
  await tools.stop();
}, 60_000);

/** Each receipt exactly as the API serves it: the bytes, not a parsed copy. */
async function receiptBytes(workIds: string[]): Promise<string[]> {
  const bodies: string[] = [];
  for (const id of workIds) {
    const res = await fetch(`${h.url}/v1/work/${id}/receipt`, { headers: adminHeaders() });
    expect(res.status).toBe(200);
    bodies.push(await res.text());
  }
  return bodies;
}

const weather = {
  type: 'function' as const,
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

/** One call of each kind the gateway serves; returns their work ids once each has ended. */
async function gatewayCalls(token: string): Promise<string[]> {
  const openai = new OpenAI({ apiKey: token, baseURL: `${h.url}/v1`, maxRetries: 0 });
  const anthropic = new Anthropic({ apiKey: token, baseURL: h.url, maxRetries: 0 });
  const ids: string[] = [];

  h.provider().script('ok-model', [
    { kind: 'stream', chunks: ['plain'], usage: { input_tokens: 3, output_tokens: 1 } },
  ]);
  const plain = await openai.chat.completions
    .create({ model: 'scripted/ok-model', messages: [{ role: 'user', content: 'hi' }] })
    .withResponse();
  ids.push(plain.response.headers.get('x-tally-work-id')!);

  h.provider().script('ok-model', [
    { kind: 'stream', chunks: ['str', 'eamed'], usage: { input_tokens: 4, output_tokens: 2 }, chunkDelayMs: 5 },
  ]);
  const streamed = await openai.chat.completions
    .create({
      model: 'scripted/ok-model',
      stream: true,
      stream_options: { include_usage: true },
      tools: [weather],
      messages: [{ role: 'user', content: 'weather?' }],
    })
    .withResponse();
  for await (const chunk of streamed.data) void chunk;
  ids.push(streamed.response.headers.get('x-tally-work-id')!);

  // The OpenAI-kind provider reached through the Anthropic dialect: translated both ways.
  h.provider().script('ok-model', [
    { kind: 'stream', chunks: ['bonjour'], usage: { input_tokens: 5, output_tokens: 1 } },
  ]);
  const message = await anthropic.messages
    .create({ model: 'scripted/ok-model', max_tokens: 16, messages: [{ role: 'user', content: 'salut' }] })
    .withResponse();
  ids.push(message.response.headers.get('x-tally-work-id')!);

  const client = new Client({ name: 'agent', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  const result = await client.callTool({ name: 'calc__add', arguments: { a: 2, b: 5 } });
  ids.push(result._meta!['tally/work_id'] as string);
  await client.close();

  for (const id of ids) await h.terminal(id);
  return ids;
}

describe('issue 10 replay of gateway receipts', () => {
  it('Issue 10 replaying the work streams into an empty database rebuilds the receipts of drop-in and MCP calls byte for byte', async () => {
    const { token } = await issueCapability(h, [
      ...scriptedGrants(MODELS),
      { server_id: 'calc', tool_name: 'add', max_total_cost_units: 1_000 },
    ]);
    const ids = await gatewayCalls(token);
    const before = await receiptBytes(ids);
    const parsed = before.map((b) => JSON.parse(b) as Record<string, unknown>);
    expect(parsed.map((r) => r['purpose'])).toEqual(['execute', 'execute', 'execute', 'tool_call']);
    expect(parsed.at(-1)).toMatchObject({ purpose: 'tool_call', provider: 'calc', model: 'add' });
    for (const receipt of parsed) expect((receipt['attempts'] as unknown[]).length).toBeGreaterThan(0);

    await h.processes[0]!.stop();
    const live = await workProjectionDigest(await h.projectionDatabase(), h.namespace);
    const empty = await h.newDatabase('replayed');
    await h.startOne(0, empty.env);
    await h.eventually('the replay to reach the live checkpoint', async () =>
      (await workProjectionDigest(empty, h.namespace)).checkpoint >= live.checkpoint ? true : undefined,
    );
    expect(await receiptBytes(ids)).toEqual(before);
    expect((await workProjectionDigest(empty, h.namespace)).digest).toBe(live.digest);
  }, 240_000);
});
