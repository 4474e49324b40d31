// Proves issue 10 with the official OpenAI SDK pointed unchanged at a metered orchestrator: non-streaming and streaming calls as work units with receipts, tool calls both ways, translation to an Anthropic-kind provider, 402 budget refusals that the SDK does not retry, 401 for a bad key, idempotent retries, fallback legs, and an abort by disconnecting.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import { MODELS } from '../orchestrator/orchestrator.harness.js';
import { issueCapability, meteredHarness, scriptedGrants } from './gateway.support.js';

const h = meteredHarness('gwoai');
let client: OpenAI;
let token: string;

beforeAll(async () => {
  await h.startAuthority();
  await h.start(1);
  token = (await issueCapability(h, scriptedGrants(MODELS))).token;
  client = new OpenAI({ apiKey: token, baseURL: `${h.url}/v1` });
}, 240_000);
afterAll(() => h.dispose(), 60_000);

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

// The reply reaches the caller before the projection has folded the unit's last events,
// so the receipt is read once the projected unit has ended (every attempt settled).
async function receiptOf(workId: string): Promise<Record<string, unknown>> {
  await h.terminal(workId);
  return h.eventually(`receipt of ${workId}`, async () => {
    const r = await h.get(`/v1/work/${workId}/receipt`);
    return r.status === 200 ? r.body : undefined;
  });
}

describe('POST /v1/chat/completions with the official OpenAI SDK', () => {
  it('item 1 a non-streaming call is a metered work unit: the reply, its usage and x-tally-work-id, readable at GET /v1/work/{id}', async () => {
    h.provider().script('ok-model', [
      { kind: 'stream', chunks: ['Hel', 'lo'], usage: { input_tokens: 9, output_tokens: 2 } },
    ]);
    const { data, response } = await client.chat.completions
      .create({ model: 'scripted/ok-model', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.choices[0]!.message.content).toBe('Hello');
    expect(data.choices[0]!.finish_reason).toBe('stop');
    expect(data.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 });
    const workId = response.headers.get('x-tally-work-id')!;
    expect(workId).toBeTruthy();
    expect(await h.terminal(workId)).toMatchObject({ status: 'completed', output: 'Hello' });
    const receipt = await receiptOf(workId);
    expect(receipt).toMatchObject({ metered: true, winning_attempt: 0 });
    expect((receipt['attempts'] as Record<string, unknown>[])[0]!['usage']).toMatchObject({
      input_tokens: 9,
      output_tokens: 2,
    });
  });

  it('item 6 the agent token never reaches the provider and the provider key never reaches the agent', async () => {
    const before = h.provider().requests.length;
    const { response } = await client.chat.completions
      .create({ model: 'scripted/ok-model', messages: [{ role: 'user', content: 'secret?' }] })
      .withResponse();
    const seen = h.provider().requests.slice(before);
    expect(seen).toHaveLength(1);
    expect(JSON.stringify(seen[0]!.headers)).not.toContain(token);
    expect(seen[0]!.headers['authorization']).toBe('Bearer test-key');
    expect(JSON.stringify([...response.headers.entries()])).not.toContain('test-key');
  });

  it('item 2 streaming: deltas arrive as chunks and the usage chunk equals the receipt', async () => {
    h.provider().script('ok-model', [
      { kind: 'stream', chunks: ['a', 'b', 'c'], usage: { input_tokens: 4, output_tokens: 3 }, chunkDelayMs: 20 },
    ]);
    const stream = await client.chat.completions.create({
      model: 'scripted/ok-model',
      messages: [{ role: 'user', content: 'stream please' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const texts: string[] = [];
    let usage: OpenAI.CompletionUsage | undefined | null;
    let id = '';
    for await (const chunk of stream) {
      id = chunk.id;
      const t = chunk.choices[0]?.delta.content;
      if (t) texts.push(t);
      if (chunk.usage) usage = chunk.usage;
    }
    expect(texts.join('')).toBe('abc');
    expect(texts.length).toBeGreaterThanOrEqual(3);
    const workId = id.replace(/^chatcmpl-/, '');
    const attempt = ((await receiptOf(workId))['attempts'] as Record<string, Record<string, number>>[])[0]!;
    expect(usage).toMatchObject({
      prompt_tokens: attempt['usage']!['input_tokens'],
      completion_tokens: attempt['usage']!['output_tokens'],
    });
    expect(usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 3 });
  });

  it('item 1 tool calls both directions: tools reach the provider, its tool_calls come back, a tool result goes on', async () => {
    h.provider().script('ok-model', [
      { kind: 'stream', chunks: [], toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: '{"city":"Oslo"}' }] },
      { kind: 'stream', chunks: ['It is cold.'] },
    ]);
    const first = await client.chat.completions.create({
      model: 'scripted/ok-model',
      messages: [{ role: 'user', content: 'weather in Oslo?' }],
      tools: [weatherTool],
      tool_choice: 'auto',
    });
    const call = first.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call).toMatchObject({ id: 'call_w1', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } });
    const sent = h.provider().requests.at(-1)!.body;
    expect(sent['tools']).toEqual([weatherTool]);
    const second = await client.chat.completions.create({
      model: 'scripted/ok-model',
      messages: [
        { role: 'user', content: 'weather in Oslo?' },
        first.choices[0]!.message,
        { role: 'tool', tool_call_id: 'call_w1', content: 'cold' },
      ],
      tools: [weatherTool],
    });
    expect(second.choices[0]!.message.content).toBe('It is cold.');
    expect(h.provider().requests.at(-1)!.body['messages']).toEqual([
      { role: 'user', content: 'weather in Oslo?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_w1', content: 'cold' },
    ]);
  });

  it('item 3 translation: an OpenAI caller reaches an Anthropic-kind provider, system prompt and tools translated, tool_use back as tool_calls', async () => {
    h.provider().script('fallback-model', [
      {
        kind: 'stream',
        chunks: ['Sure. '],
        toolCalls: [{ id: 'toolu_9', name: 'get_weather', arguments: '{"city":"Rome"}' }],
        usage: { input_tokens: 7, output_tokens: 5 },
      },
    ]);
    const reply = await client.chat.completions.create({
      model: 'scripted-anthropic/fallback-model',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'Rome?' },
      ],
      tools: [weatherTool],
      stop: ['END'],
      temperature: 0.3,
    });
    const sent = h.provider().requests.at(-1)!;
    expect(sent.api).toBe('anthropic');
    expect(sent.body).toMatchObject({
      system: 'be brief',
      messages: [{ role: 'user', content: 'Rome?' }],
      tools: [{ name: 'get_weather', description: 'Weather of a city', input_schema: weatherTool.function.parameters }],
      stop_sequences: ['END'],
      temperature: 0.3,
    });
    expect(reply.choices[0]!.message.content).toBe('Sure. ');
    expect(reply.choices[0]!.message.tool_calls).toEqual([
      { id: 'toolu_9', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
    ]);
    expect(reply.choices[0]!.finish_reason).toBe('tool_calls');
    expect(reply.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 5 });
  });

  it('item 4 a bad key is an AuthenticationError (401 with WWW-Authenticate: Bearer)', async () => {
    const bad = new OpenAI({ apiKey: 'not-a-token', baseURL: `${h.url}/v1`, maxRetries: 0 });
    const error = await bad.chat.completions
      .create({ model: 'scripted/ok-model', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get('www-authenticate')).toBe('Bearer');
  });

  it('item 4 bad input is a 400 naming the field', async () => {
    const error = await client.chat.completions
      .create({ model: 'scripted/ok-model', messages: [{ role: 'user', content: 'x' }], temperature: 7 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.APIError>).param).toBe('temperature');
  });

  it('item 4 a budget refusal is an APIError 402 naming the reason, which the default retry policy does not retry', async () => {
    const poor = await issueCapability(h, [
      { server_id: 'scripted', tool_name: 'ok-model', max_cost_per_invocation: 1 },
    ]);
    const before = h.calls();
    const submissions: string[] = [];
    const fetchCounting: typeof fetch = async (url, init) => {
      submissions.push(String(url));
      return fetch(url, init);
    };
    const sdk = new OpenAI({ apiKey: poor.token, baseURL: `${h.url}/v1`, fetch: fetchCounting });
    const error = await sdk.chat.completions
      .create({ model: 'scripted/ok-model', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('requested_cost_exceeds_max_cost_per_invocation');
    expect(submissions).toHaveLength(1);
    expect(h.calls()).toBe(before);
  });

  it('item 4 / issue 11 a rate limit of the grant is a 429 with retry-after, and the SDK is told a retry is worth it', async () => {
    const limited = await issueCapability(h, [
      { server_id: 'scripted', tool_name: 'ok-model', rate_limits: { requests_per_minute: 1 } },
    ]);
    const sdk = new OpenAI({ apiKey: limited.token, baseURL: `${h.url}/v1`, maxRetries: 0 });
    h.provider().script('ok-model', [{ kind: 'stream', chunks: ['one'] }]);
    await sdk.chat.completions.create({ model: 'scripted/ok-model', messages: [{ role: 'user', content: 'x' }] });
    const before = h.calls();
    const error = (await sdk.chat.completions
      .create({ model: 'scripted/ok-model', messages: [{ role: 'user', content: 'y' }] })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error.status).toBe(429);
    expect(error.code).toBe('rate_limited');
    const retryAfter = Number(error.headers?.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(error.headers?.get('x-should-retry')).toBeNull();
    expect(h.calls()).toBe(before);
  });

  it('item 4 an unknown model is a 404 NotFoundError naming the model', async () => {
    const error = await client.chat.completions
      .create({ model: 'nobody/none', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('item 4 an idempotent retry with the same Idempotency-Key returns the same answer and pays once', async () => {
    h.provider().script('slow-model', [
      { kind: 'stream', chunks: ['once'], usage: { input_tokens: 3, output_tokens: 1 } },
    ]);
    const key = `key-${Date.now()}`;
    const ask = () =>
      client.chat.completions
        .create(
          { model: 'scripted/slow-model', messages: [{ role: 'user', content: 'pay once' }] },
          { headers: { 'Idempotency-Key': key } },
        )
        .withResponse();
    const before = h.calls('slow-model');
    const a = await ask();
    const b = await ask();
    expect(b.data.choices[0]!.message.content).toBe('once');
    expect(b.data.id).toBe(a.data.id);
    expect(b.response.headers.get('x-tally-work-id')).toBe(a.response.headers.get('x-tally-work-id'));
    expect(h.calls('slow-model') - before).toBe(1);
    const changed = await client.chat.completions
      .create(
        { model: 'scripted/slow-model', messages: [{ role: 'user', content: 'other body' }] },
        { headers: { 'Idempotency-Key': key } },
      )
      .catch((e: unknown) => e);
    expect((changed as InstanceType<typeof OpenAI.APIError>).status).toBe(409);
    // Issue 8: the same code as on every endpoint that takes a key, and the key is named.
    expect((changed as InstanceType<typeof OpenAI.APIError>).code).toBe('idempotency_conflict');
    expect((changed as InstanceType<typeof OpenAI.APIError>).message).toContain(key);
  });

  it('item 1 fallback via x-tally-fallbacks: a failing first leg falls back to the next, recorded as route_fallback', async () => {
    h.provider().always('limited-model', { kind: 'status', status: 400 });
    h.provider().script('ok-model', [{ kind: 'stream', chunks: ['from fallback'] }]);
    const { data, response } = await client.chat.completions
      .create(
        { model: 'scripted/limited-model', messages: [{ role: 'user', content: 'fall back' }] },
        { headers: { 'x-tally-fallbacks': 'scripted/ok-model' } },
      )
      .withResponse();
    expect(data.choices[0]!.message.content).toBe('from fallback');
    const attempts = (await receiptOf(response.headers.get('x-tally-work-id')!))['attempts'] as Record<
      string,
      unknown
    >[];
    expect(attempts.map((a) => [a['model'], a['reason']])).toEqual([
      ['limited-model', 'initial'],
      ['ok-model', 'route_fallback'],
    ]);
  });

  it('item 2 / O3 a client that disconnects mid-stream aborts its unit: settlement cancelled, partial output kept', async () => {
    h.provider().script('abort-model', [
      { kind: 'stream', chunks: ['part', 'ial', ...Array(50).fill('.')], chunkDelayMs: 100 },
    ]);
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model: 'scripted/abort-model', messages: [{ role: 'user', content: 'long' }], stream: true },
      { signal: controller.signal },
    );
    let id = '';
    let seen = '';
    for await (const chunk of stream) {
      id = chunk.id;
      seen += chunk.choices[0]?.delta.content ?? '';
      if (seen.includes('partial')) break;
    }
    controller.abort();
    const workId = id.replace(/^chatcmpl-/, '');
    expect(await h.terminal(workId)).toMatchObject({ status: 'aborted' });
    const attempt = ((await receiptOf(workId))['attempts'] as Record<string, unknown>[])[0]!;
    expect(attempt['settlement']).toBe('cancelled');
    const log = await h.get(`/v1/sessions/${workId}/messages`);
    expect(JSON.stringify(log.body)).toContain('partial');
  });

  it('GET /v1/models lists the configured models as <provider>/<model>', async () => {
    const ids = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual(expect.arrayContaining(['scripted/ok-model', 'scripted-anthropic/ok-model']));
  });
});
