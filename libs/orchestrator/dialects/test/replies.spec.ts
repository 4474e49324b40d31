// Proves the reply side of the dialect tables (issue 10 items 3-4): provider streams of either kind read into one neutral reply with tool calls, usage and stop reason; replies and streams written in either dialect; errors in each dialect's shape and status.
import { describe, expect, it } from '@jest/globals';
import {
  AnthropicEventReader,
  AnthropicStreamWriter,
  anthropicReplyOut,
  deltasOf,
  dialectError,
  kindOfDenyReason,
  reasonCode,
  OpenAiChunkReader,
  OpenAiStreamWriter,
  openAiReplyOut,
  ReplyBuilder,
  ANTHROPIC_STOP_OF,
  OPENAI_FINISH_OF,
  STOP_OF_ANTHROPIC,
  STOP_OF_OPENAI_FINISH,
  type NeutralReply,
  type StopReason,
} from '../src/index.js';

const meta = { id: 'r1', model: 'p/m', created: 1 };
const toolReply: NeutralReply = {
  parts: [
    { type: 'text', text: 'Let me check.' },
    { type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
  ],
  stop_reason: 'tool_use',
  usage: { input_tokens: 12, output_tokens: 7 },
};

describe('provider streams read into one neutral reply', () => {
  it('OpenAI chunks with text, a tool call split over chunks, finish_reason and usage', () => {
    const reader = new OpenAiChunkReader();
    const builder = new ReplyBuilder(10_000);
    const chunks = [
      { choices: [{ index: 0, delta: { role: 'assistant', content: 'Let me ' } }] },
      { choices: [{ index: 0, delta: { content: 'check.' } }] },
      {
        choices: [
          {
            index: 0,
            delta: {
              tool_calls: [
                { index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } },
              ],
            },
          },
        ],
      },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] } }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] } }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
      { choices: [], usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 } },
    ];
    let finish: StopReason | undefined;
    let usage;
    for (const chunk of chunks) {
      const r = reader.read(chunk);
      r.deltas.forEach((d) => builder.add(d));
      finish = r.finish ?? finish;
      usage = r.usage ?? usage;
    }
    expect(builder.reply(finish!, usage)).toEqual(toolReply);
  });

  it('Anthropic events with a text block, a tool_use block with input_json deltas, stop_reason and usage', () => {
    const reader = new AnthropicEventReader();
    const builder = new ReplyBuilder(10_000);
    const events: [string, Record<string, unknown>][] = [
      ['message_start', { message: { usage: { input_tokens: 12, output_tokens: 1 } } }],
      ['content_block_start', { index: 0, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Let me check.' } }],
      ['content_block_stop', { index: 0 }],
      [
        'content_block_start',
        { index: 1, content_block: { type: 'tool_use', id: 'call_1', name: 'get_weather', input: {} } },
      ],
      ['content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"city":' } }],
      ['content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '"Oslo"}' } }],
      ['content_block_stop', { index: 1 }],
      ['message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 7 } }],
      ['ping', {}],
      ['message_stop', {}],
    ];
    let finish: StopReason | undefined;
    let done = false;
    for (const [type, data] of events) {
      const r = reader.read(type, data);
      r.deltas.forEach((d) => builder.add(d));
      finish = r.finish ?? finish;
      done ||= r.done === true;
    }
    expect(done).toBe(true);
    expect(builder.reply(finish!, reader.usage)).toEqual(toolReply);
  });

  it('a reply past its bound is refused instead of growing without limit', () => {
    const builder = new ReplyBuilder(5);
    expect(() => builder.add({ kind: 'text', text: 'too long' })).toThrow(RangeError);
  });
});

describe('stop reasons map both ways', () => {
  const rows: [StopReason, string, string][] = [
    ['end_turn', 'stop', 'end_turn'],
    ['max_tokens', 'length', 'max_tokens'],
    ['tool_use', 'tool_calls', 'tool_use'],
    ['stop_sequence', 'stop', 'stop_sequence'],
    ['content_filter', 'content_filter', 'refusal'],
  ];
  it.each(rows)('%s is OpenAI %s and Anthropic %s', (stop, openai, anthropic) => {
    expect(OPENAI_FINISH_OF[stop]).toBe(openai);
    expect(ANTHROPIC_STOP_OF[stop]).toBe(anthropic);
    expect(STOP_OF_ANTHROPIC[anthropic]).toBe(stop);
    // OpenAI cannot tell a stop sequence from a natural end.
    expect(STOP_OF_OPENAI_FINISH[openai]).toBe(stop === 'stop_sequence' ? 'end_turn' : stop);
  });
});

describe('replies written for each dialect', () => {
  it('OpenAI: content, tool_calls, finish_reason and usage', () => {
    expect(openAiReplyOut(toolReply, meta)).toMatchObject({
      id: 'r1',
      object: 'chat.completion',
      model: 'p/m',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Let me check.',
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
    });
  });

  it('Anthropic: text and tool_use blocks, stop_reason and usage', () => {
    expect(anthropicReplyOut(toolReply, meta)).toEqual({
      id: 'r1',
      type: 'message',
      role: 'assistant',
      model: 'p/m',
      content: [
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Oslo' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 7 },
    });
  });

  it('an OpenAI stream written from deltas reads back as the same reply, usage last', () => {
    const w = new OpenAiStreamWriter(meta, true);
    const sse =
      w.start() +
      deltasOf(toolReply.parts)
        .map((d) => w.delta(d))
        .join('') +
      w.end('tool_use', toolReply.usage);
    const data = sse
      .split('\n\n')
      .filter(Boolean)
      .map((f) => f.replace(/^data: /, ''));
    expect(data.at(-1)).toBe('[DONE]');
    const reader = new OpenAiChunkReader();
    const builder = new ReplyBuilder(1_000);
    let finish: StopReason | undefined;
    let usage;
    for (const d of data.slice(0, -1)) {
      const r = reader.read(JSON.parse(d));
      r.deltas.forEach((x) => builder.add(x));
      finish = r.finish ?? finish;
      usage = r.usage ?? usage;
    }
    expect(builder.reply(finish!, usage)).toEqual(toolReply);
  });

  it('an Anthropic stream written from deltas reads back as the same reply, usage in message_delta', () => {
    const w = new AnthropicStreamWriter(meta);
    const sse =
      w.start() +
      deltasOf(toolReply.parts)
        .map((d) => w.delta(d))
        .join('') +
      w.end('tool_use', toolReply.usage);
    const frames = sse
      .split('\n\n')
      .filter(Boolean)
      .map((f) => {
        const [event, data] = f.split('\n');
        return [event!.replace('event: ', ''), JSON.parse(data!.replace('data: ', ''))] as const;
      });
    expect(frames.map(([t]) => t)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const reader = new AnthropicEventReader();
    const builder = new ReplyBuilder(1_000);
    let finish: StopReason | undefined;
    for (const [type, data] of frames) {
      const r = reader.read(type, data);
      r.deltas.forEach((x) => builder.add(x));
      finish = r.finish ?? finish;
    }
    expect(builder.reply(finish!, reader.usage)).toEqual(toolReply);
  });
});

describe('errors in each dialect shape, with the statuses the SDKs understand', () => {
  const rows: [string, Parameters<typeof dialectError>[1], number, string, string, Record<string, string>][] = [
    [
      'bad input names the field',
      { kind: 'invalid_request', message: 'messages must be an array', field: 'messages' },
      400,
      'invalid_request_error',
      'invalid_request_error',
      { 'x-should-retry': 'false' },
    ],
    [
      'a bad key',
      { kind: 'auth', message: 'unknown token' },
      401,
      'invalid_request_error',
      'authentication_error',
      { 'www-authenticate': 'Bearer' },
    ],
    [
      'a budget refusal names its reason',
      { kind: 'budget', message: 'budget exhausted', code: 'total_cost_limit_reached' },
      402,
      'budget_exceeded',
      'budget_exceeded',
      { 'x-should-retry': 'false' },
    ],
    [
      'a rate limit carries retry-after',
      { kind: 'rate_limited', message: 'slow down', code: 'rate_limited', retry_after_ms: 1_500 },
      429,
      'rate_limit_exceeded',
      'rate_limit_error',
      { 'retry-after': '2', 'retry-after-ms': '1500' },
    ],
    [
      'an unknown model',
      { kind: 'not_found', message: 'no such model', code: 'model_not_found', field: 'model' },
      404,
      'invalid_request_error',
      'not_found_error',
      {},
    ],
    [
      'providers that failed every attempt',
      { kind: 'upstream', message: 'HTTP 500' },
      502,
      'server_error',
      'api_error',
      {},
    ],
    ['a fault of Tally', { kind: 'internal', message: 'oops' }, 500, 'server_error', 'api_error', {}],
  ];
  it.each(rows)('%s', (_name, error, status, openaiType, anthropicType, headers) => {
    const openai = dialectError('openai', error);
    const anthropic = dialectError('anthropic', error);
    expect(openai.status).toBe(status);
    expect(anthropic.status).toBe(status);
    expect(openai.body).toEqual({
      error: { message: error.message, type: openaiType, param: error.field ?? null, code: error.code ?? null },
    });
    expect(anthropic.body).toEqual({ type: 'error', error: { type: anthropicType, message: error.message } });
    expect(openai.headers).toMatchObject(headers);
  });

  it.each([
    ['rate_limited', 'rate_limited'],
    ['total_cost_limit_reached', 'budget'],
    ['max_invocations_reached', 'budget'],
    ['no_matching_grant', 'budget'],
    ['capability_revoked', 'auth'],
  ])('the authority deny reason %s is a %s error', (reason, kind) => {
    expect(kindOfDenyReason(reason)).toBe(kind);
  });

  it.each([
    ['rate_limited', 'rate_limited'],
    ['requested cost exceeds max_cost_per_invocation', 'requested_cost_exceeds_max_cost_per_invocation'],
    ['budget exhausted', 'budget_exhausted'],
  ])('the deny reason %s is the code %s', (reason, code) => {
    expect(reasonCode(reason)).toBe(code);
  });
});
