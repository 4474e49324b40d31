// Proves issue 10 with the official Anthropic SDK pointed unchanged at a metered orchestrator: Messages non-streaming and streaming (message_start … message_stop, usage equal to the receipt's), tool_use and tool_result both ways, translation to an OpenAI-kind provider, 402 and 401 in Anthropic's error shape.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import Anthropic from '@anthropic-ai/sdk';
import { MODELS } from '../orchestrator/orchestrator.harness.js';
import { issueCapability, meteredHarness, scriptedGrants } from './gateway.support.js';

const h = meteredHarness('gwant');
let client: Anthropic;

beforeAll(async () => {
  await h.startAuthority();
  await h.start(1);
  const { token } = await issueCapability(h, scriptedGrants(MODELS));
  client = new Anthropic({ apiKey: token, baseURL: h.url });
}, 240_000);
afterAll(() => h.dispose(), 60_000);

const weather = {
  name: 'get_weather',
  description: 'Weather of a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
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

describe('POST /v1/messages with the official Anthropic SDK', () => {
  it('item 1 a non-streaming message is a metered work unit with Anthropic usage and stop_reason', async () => {
    h.provider().script('ok-model', [
      { kind: 'stream', chunks: ['Hi', ' there'], usage: { input_tokens: 6, output_tokens: 2 } },
    ]);
    const { data, response } = await client.messages
      .create({
        model: 'scripted-anthropic/ok-model',
        max_tokens: 64,
        system: 'be kind',
        messages: [{ role: 'user', content: 'hello' }],
      })
      .withResponse();
    expect(data.content).toEqual([{ type: 'text', text: 'Hi there' }]);
    expect(data.stop_reason).toBe('end_turn');
    expect(data.usage).toMatchObject({ input_tokens: 6, output_tokens: 2 });
    const workId = response.headers.get('x-tally-work-id')!;
    expect(await h.terminal(workId)).toMatchObject({ status: 'completed', output: 'Hi there' });
    expect(h.provider().requests.at(-1)!.body).toMatchObject({ system: 'be kind', max_tokens: 64 });
    expect(h.provider().requests.at(-1)!.headers['x-api-key']).toBe('test-key');
  });

  it('item 2 streaming: the event stream runs message_start to message_stop and its usage equals the receipt', async () => {
    h.provider().script('ok-model', [
      { kind: 'stream', chunks: ['x', 'y', 'z'], usage: { input_tokens: 8, output_tokens: 3 }, chunkDelayMs: 20 },
    ]);
    const stream = client.messages.stream({
      model: 'scripted-anthropic/ok-model',
      max_tokens: 32,
      messages: [{ role: 'user', content: 'go' }],
    });
    const types: string[] = [];
    stream.on('streamEvent', (event) => void types.push(event.type));
    const final = await stream.finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'xyz' }]);
    expect(types[0]).toBe('message_start');
    expect(types.at(-1)).toBe('message_stop');
    expect(types.filter((t) => t === 'content_block_delta').length).toBeGreaterThanOrEqual(3);
    const workId = final.id.replace(/^msg_/, '');
    const attempt = ((await receiptOf(workId))['attempts'] as Record<string, Record<string, number>>[])[0]!;
    expect(final.usage).toMatchObject({
      input_tokens: attempt['usage']!['input_tokens'],
      output_tokens: attempt['usage']!['output_tokens'],
    });
  });

  it('item 1 tool_use out and tool_result back, streamed, with input_json deltas', async () => {
    h.provider().script('ok-model', [
      {
        kind: 'stream',
        chunks: ['Checking.'],
        toolCalls: [{ id: 'toolu_a1', name: 'get_weather', arguments: '{"city":"Oslo"}' }],
      },
      { kind: 'stream', chunks: ['Cold.'] },
    ]);
    const stream = client.messages.stream({
      model: 'scripted-anthropic/ok-model',
      max_tokens: 64,
      tools: [weather],
      messages: [{ role: 'user', content: 'Oslo weather?' }],
    });
    const first = await stream.finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content).toEqual([
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_a1', name: 'get_weather', input: { city: 'Oslo' } },
    ]);
    const second = await client.messages.create({
      model: 'scripted-anthropic/ok-model',
      max_tokens: 64,
      tools: [weather],
      messages: [
        { role: 'user', content: 'Oslo weather?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_a1', content: 'cold' }] },
      ],
    });
    expect(second.content).toEqual([{ type: 'text', text: 'Cold.' }]);
    expect(h.provider().requests.at(-1)!.body['messages']).toEqual([
      { role: 'user', content: 'Oslo weather?' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'toolu_a1', name: 'get_weather', input: { city: 'Oslo' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_a1', content: 'cold' }] },
    ]);
  });

  it('item 3 translation: an Anthropic caller reaches an OpenAI-kind provider, its tool_calls back as tool_use', async () => {
    h.provider().script('fallback-model', [
      {
        kind: 'stream',
        chunks: [],
        toolCalls: [{ id: 'call_z', name: 'get_weather', arguments: '{"city":"Rome"}' }],
        usage: { input_tokens: 5, output_tokens: 4 },
      },
    ]);
    const reply = await client.messages.create({
      model: 'scripted/fallback-model',
      max_tokens: 20,
      system: [{ type: 'text', text: 'terse' }],
      tools: [weather],
      tool_choice: { type: 'any' },
      stop_sequences: ['STOP'],
      messages: [{ role: 'user', content: 'Rome?' }],
    });
    const sent = h.provider().requests.at(-1)!;
    expect(sent.api).toBe('openai');
    expect(sent.body).toMatchObject({
      messages: [
        { role: 'system', content: 'terse' },
        { role: 'user', content: 'Rome?' },
      ],
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', description: 'Weather of a city', parameters: weather.input_schema },
        },
      ],
      tool_choice: 'required',
      stop: ['STOP'],
      max_tokens: 20,
    });
    expect(reply.content).toEqual([{ type: 'tool_use', id: 'call_z', name: 'get_weather', input: { city: 'Rome' } }]);
    expect(reply.stop_reason).toBe('tool_use');
    expect(reply.usage).toMatchObject({ input_tokens: 5, output_tokens: 4 });
  });

  it('item 4 a bad key is an AuthenticationError in Anthropic shape', async () => {
    const bad = new Anthropic({ apiKey: 'nope', baseURL: h.url, maxRetries: 0 });
    const error = await bad.messages
      .create({ model: 'scripted-anthropic/ok-model', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error' },
    });
  });

  it('item 4 a budget refusal is an APIError 402 of type budget_exceeded, not retried', async () => {
    const poor = await issueCapability(h, [
      { server_id: 'scripted-anthropic', tool_name: 'ok-model', max_cost_per_invocation: 1 },
    ]);
    let requests = 0;
    const sdk = new Anthropic({
      apiKey: poor.token,
      baseURL: h.url,
      fetch: async (url, init) => {
        requests++;
        return fetch(url, init);
      },
    });
    const error = await sdk.messages
      .create({ model: 'scripted-anthropic/ok-model', max_tokens: 64, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).status).toBe(402);
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      error: { type: 'budget_exceeded' },
    });
    expect(requests).toBe(1);
  });

  it('item 4 a missing max_tokens is a 400 naming the field', async () => {
    const res = await fetch(`${h.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': (client.apiKey as string) ?? '' },
      body: JSON.stringify({ model: 'scripted-anthropic/ok-model', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens is required' },
    });
  });
});
