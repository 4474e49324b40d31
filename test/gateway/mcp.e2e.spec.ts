// Proves issue 10 item 5 with the official MCP client against POST /mcp of a metered orchestrator and an MCP tool server written with the official SDK: tools/list filtered by grants (unpriced tools never offered), a call admitted at the tool's price and settled, a refused call that never reaches the server, concurrent calls that cannot overspend, a hanging server cut off at its timeout and kept charged (B5), and credentials on their own side.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { authorityCall, issueCapability, meteredHarness } from './gateway.support.js';
import { McpToolServer } from './mcp-tool-server.js';

let tools: McpToolServer;
const price = { cost_units_per_call: 10, currency: 'USD' };
const toolServersConfig = () => ({
  tool_servers: [
    {
      name: 'calc',
      url: tools.url,
      headers_env: { Authorization: 'CALC_AUTH_HEADER' },
      tools: { add: price, fail: price, hang: price },
      timeout_ms: 1_000,
    },
  ],
});
const h = meteredHarness('gwmcp', { CALC_AUTH_HEADER: 'Bearer calc-secret' }, toolServersConfig);

beforeAll(async () => {
  tools = await McpToolServer.start();
  await h.startAuthority();
  await h.start(1);
}, 240_000);
afterAll(async () => {
  await h.dispose();
  await tools.stop();
}, 60_000);

async function mcpClient(token: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'agent', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}`, ...headers } },
    }),
  );
  return client;
}

const text = (result: Record<string, unknown>) => ((result['content'] as { text: string }[])[0] ?? { text: '' }).text;

describe('POST /mcp with the official MCP client', () => {
  it('item 5 tools/list shows only the priced tools the grants allow, named <server>__<tool>', async () => {
    const cap = await issueCapability(h, [
      { server_id: 'calc', tool_name: 'add' },
      { server_id: 'calc', tool_name: 'secret' },
    ]);
    const client = await mcpClient(cap.token);
    const { tools: listed } = await client.listTools();
    expect(listed.map((t) => t.name)).toEqual(['calc__add']);
    expect(listed[0]!.inputSchema).toMatchObject({ properties: { a: { type: 'number' }, b: { type: 'number' } } });
    await client.close();
  });

  it('item 5 a call is admitted at the tool price (server_id = server, tool_name = tool), dispatched, settled and receipted', async () => {
    const cap = await issueCapability(h, [{ server_id: 'calc', tool_name: 'add', max_total_cost_units: 1_000 }]);
    const client = await mcpClient(cap.token);
    const result = await client.callTool({ name: 'calc__add', arguments: { a: 2, b: 3 } });
    expect(text(result)).toBe('5');
    expect(result.isError).toBeFalsy();
    const workId = result._meta!['tally/work_id'] as string;
    expect(result._meta!['tally/receipt_id']).toEqual(expect.any(String));
    // The call answers before the projection has the unit's conclusion: wait for the receipt to show it.
    const receipt = await h.eventually('the tool call receipt with its conclusion', async () => {
      const r = await h.get(`/v1/work/${workId}/receipt`);
      return r.status === 200 && r.body['winning_attempt'] !== null ? r.body : undefined;
    });
    expect(receipt).toMatchObject({
      purpose: 'tool_call',
      provider: 'calc',
      model: 'add',
      metered: true,
      winning_attempt: 0,
    });
    const usage = await h.eventually('the authority to record the call', async () => {
      const g = (
        (await authorityCall(h, 'GET', `/v1/capabilities/${cap.id}/usage`))['grants'] as Record<string, unknown>[]
      )[0]!;
      return g['realized_cost_units'] === 10 ? g : undefined;
    });
    expect(usage['invocation_count']).toBe(1);
    // The tool server got its own credential, never the agent's token.
    expect(tools.headers.at(-1)!['authorization']).toBe('Bearer calc-secret');
    expect(JSON.stringify(tools.headers)).not.toContain(cap.token);
    await client.close();
  });

  it('item 5 a refused call is an error result naming the reason and never reaches the tool server', async () => {
    const cap = await issueCapability(h, [{ server_id: 'calc', tool_name: 'add', max_cost_per_invocation: 5 }]);
    const client = await mcpClient(cap.token);
    const before = tools.count('add');
    const result = await client.callTool({ name: 'calc__add', arguments: { a: 1, b: 1 } });
    expect(result.isError).toBe(true);
    expect(text(result)).toContain('refused by the budget authority');
    expect(tools.count('add')).toBe(before);
    await client.close();
  });

  it('item 5 concurrent calls that exhaust the budget never overspend', async () => {
    const cap = await issueCapability(h, [{ server_id: 'calc', tool_name: 'add', max_total_cost_units: 30 }]);
    const client = await mcpClient(cap.token);
    const before = tools.count('add');
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => client.callTool({ name: 'calc__add', arguments: { a: i, b: 0 } })),
    );
    const ok = results.filter((r) => !r.isError);
    expect(ok).toHaveLength(3);
    expect(tools.count('add') - before).toBe(3);
    const usage = await h.eventually('settled usage', async () => {
      const g = (
        (await authorityCall(h, 'GET', `/v1/capabilities/${cap.id}/usage`))['grants'] as Record<string, unknown>[]
      )[0]!;
      return g['realized_cost_units'] === 30 ? g : undefined;
    });
    expect(usage['invocation_count']).toBe(3);
    await client.close();
  });

  it('item 5 a tool error after dispatch keeps the charge (B5), and a hanging server is cut off at its timeout, settled as a deadline and kept charged', async () => {
    const cap = await issueCapability(h, [
      { server_id: 'calc', tool_name: 'fail' },
      { server_id: 'calc', tool_name: 'hang' },
    ]);
    const client = await mcpClient(cap.token);
    const failed = await client.callTool({ name: 'calc__fail', arguments: {} });
    expect(failed.isError).toBe(true);
    expect(text(failed)).toBe('tool failed');
    const started = Date.now();
    const hung = await client.callTool({ name: 'calc__hang', arguments: {} });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(hung.isError).toBe(true);
    expect(text(hung)).toContain('did not answer in time');
    // The projection may show the attempt started before it shows it settled: wait for its settlement.
    const attempt = (
      (
        await h.eventually('hang receipt with the settled attempt', async () => {
          const r = await h.get(`/v1/work/${hung._meta!['tally/work_id'] as string}/receipt`);
          const first = r.status === 200 ? (r.body['attempts'] as Record<string, unknown>[])[0] : undefined;
          return first !== undefined && first['domain'] !== 'unknown' ? r.body : undefined;
        })
      )['attempts'] as Record<string, unknown>[]
    )[0]!;
    expect(attempt).toMatchObject({ domain: 'deadline', settlement: 'unknown' });
    const grants = await h.eventually('both charges kept', async () => {
      const g = (await authorityCall(h, 'GET', `/v1/capabilities/${cap.id}/usage`))['grants'] as Record<
        string,
        number
      >[];
      return g[0]!['invocation_count'] === 1 &&
        g[1]!['invocation_count'] === 1 &&
        g[1]!['committed_cost_units']! + g[1]!['realized_cost_units']! >= 10
        ? g
        : undefined;
    });
    expect(grants[0]!['realized_cost_units']).toBe(10);
    await client.close();
  });

  it('item 5 tool calls count against the session dispatch ceiling: past it a call is refused naming the ceiling and never reaches the server, and a call the budget refused gives its dispatch back', async () => {
    const cap = await issueCapability(h, [
      { server_id: 'calc', tool_name: 'add', max_total_cost_units: 10 },
      { server_id: 'calc', tool_name: 'fail' },
    ]);
    const client = await mcpClient(cap.token, { 'x-tally-dispatch-ceiling': '2' });
    const [adds, fails] = [tools.count('add'), tools.count('fail')];
    expect(text(await client.callTool({ name: 'calc__add', arguments: { a: 1, b: 1 } }))).toBe('2');
    const overBudget = await client.callTool({ name: 'calc__add', arguments: { a: 1, b: 2 } });
    expect(overBudget.isError).toBe(true);
    expect(text(overBudget)).toContain('refused by the budget authority');
    const failed = await client.callTool({ name: 'calc__fail', arguments: {} });
    expect(text(failed)).toBe('tool failed');
    const past = await client.callTool({ name: 'calc__fail', arguments: {} });
    expect(past.isError).toBe(true);
    expect(text(past)).toContain('dispatch ceiling of 2');
    expect([tools.count('add') - adds, tools.count('fail') - fails]).toEqual([1, 1]);
    await client.close();
  });

  it('item 5 concurrent tool calls never pass the session dispatch ceiling, and a bad ceiling is refused naming the header', async () => {
    const cap = await issueCapability(h, [{ server_id: 'calc', tool_name: 'add', max_total_cost_units: 10_000 }]);
    const client = await mcpClient(cap.token, { 'x-tally-dispatch-ceiling': '3' });
    const before = tools.count('add');
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => client.callTool({ name: 'calc__add', arguments: { a: i, b: 1 } })),
    );
    expect(results.filter((r) => !r.isError)).toHaveLength(3);
    expect(results.filter((r) => text(r).includes('dispatch ceiling of 3'))).toHaveLength(5);
    expect(tools.count('add') - before).toBe(3);
    await client.close();
    await expect(mcpClient(cap.token, { 'x-tally-dispatch-ceiling': 'lots' })).rejects.toThrow(
      /x-tally-dispatch-ceiling must be an integer/,
    );
  });
});
