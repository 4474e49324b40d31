// Proves B13 with O7 for the other ways in: with the authority's require_execution_nonce on, a drop-in
// chat completion and a governed MCP tool call are each paid once, through the redeem of their own nonce.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AuthorityLedger } from '../orchestrator/authority-ledger.js';
import { issueCapability, meteredHarness } from './gateway.support.js';
import { McpToolServer } from './mcp-tool-server.js';

let tools: McpToolServer;
let ledger: AuthorityLedger;
const toolServersConfig = () => ({
  tool_servers: [{ name: 'calc', url: tools.url, tools: { add: { cost_units_per_call: 10, currency: 'USD' } } }],
});
const h = meteredHarness('gwnonce', {}, toolServersConfig);

beforeAll(async () => {
  tools = await McpToolServer.start();
  await h.startAuthority({ TALLY__AUTHORITY__REQUIRE_EXECUTION_NONCE: 'true' });
  await h.start(1);
  ledger = await AuthorityLedger.open(h.natsUrl, h.namespace);
}, 240_000);
afterAll(async () => {
  await ledger?.close();
  await h.dispose();
  await tools.stop();
}, 60_000);

/** The nonce bindings the authority consumed on the tree of `capId`. */
async function consumedBindings(capId: string): Promise<Record<string, unknown>[]> {
  const events = await ledger.events(capId);
  return events.filter((e) => e.type === 'NonceConsumed').map((e) => e.payload['binding']);
}

describe('execution nonces through the drop-in and MCP entrypoints', () => {
  it('B13 O7 a drop-in chat completion is paid once, through the redeem of the nonce bound to its unit', async () => {
    const cap = await issueCapability(h, [{ server_id: 'scripted', tool_name: 'ok-model' }]);
    h.provider().script('ok-model', [
      { kind: 'stream', chunks: ['drop-in'], usage: { input_tokens: 4, output_tokens: 2 } },
    ]);
    const before = h.calls('ok-model');
    const response = await fetch(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${cap.token}` },
      body: JSON.stringify({ model: 'scripted/ok-model', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(200);
    const reply = (await response.json()) as { choices: { message: { content: string } }[] };
    expect(reply.choices[0]!.message.content).toBe('drop-in');
    expect(h.calls('ok-model') - before).toBe(1);
    const workId = response.headers.get('x-tally-work-id')!;
    expect(await consumedBindings(cap.id)).toEqual([
      expect.objectContaining({ request_id: `${workId}:attempt:0`, server_id: 'scripted', tool_name: 'ok-model' }),
    ]);
  });

  it('B13 O7 an MCP tool call reaches the tool server once, through the redeem of the nonce bound to its unit', async () => {
    const cap = await issueCapability(h, [{ server_id: 'calc', tool_name: 'add', max_total_cost_units: 1_000 }]);
    const client = new Client({ name: 'agent', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${cap.token}` } },
      }),
    );
    try {
      const before = tools.count('add');
      const result = await client.callTool({ name: 'calc__add', arguments: { a: 2, b: 3 } });
      expect(result.isError).toBeFalsy();
      expect((result['content'] as { text: string }[])[0]!.text).toBe('5');
      expect(tools.count('add') - before).toBe(1);
      const workId = result._meta!['tally/work_id'] as string;
      expect(await consumedBindings(cap.id)).toEqual([
        expect.objectContaining({ request_id: `${workId}:attempt:0`, server_id: 'calc', tool_name: 'add' }),
      ]);
    } finally {
      await client.close();
    }
  });
});
