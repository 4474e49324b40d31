// Proves the dialect translation tables (issue 10 item 3): either dialect in, either provider kind out, for messages, system prompts, tools, tool calls and results, sampling, usage, stop reasons and errors.
import { describe, expect, it } from '@jest/globals';
import {
  anthropicRequestIn,
  anthropicRequestOut,
  openAiRequestIn,
  openAiRequestOut,
  type NeutralRequest,
} from '../src/index.js';

function neutral(result: ReturnType<typeof openAiRequestIn>): NeutralRequest {
  if (!result.ok) throw new Error(`${result.field}: ${result.message}`);
  return result.value;
}

const weather = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

describe('OpenAI request in, Anthropic provider out', () => {
  const rows: [string, Record<string, unknown>, Record<string, unknown>][] = [
    [
      'system and developer messages become the system field',
      {
        model: 'm',
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'developer', content: [{ type: 'text', text: 'be kind' }] },
          { role: 'user', content: 'hi' },
        ],
      },
      { system: 'be brief\n\nbe kind', messages: [{ role: 'user', content: 'hi' }] },
    ],
    [
      'tools and tool_choice become input_schema tools and a tool choice',
      {
        model: 'm',
        messages: [{ role: 'user', content: 'weather?' }],
        tools: [{ type: 'function', function: { name: 'get_weather', description: 'd', parameters: weather } }],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
      },
      {
        tools: [{ name: 'get_weather', description: 'd', input_schema: weather }],
        tool_choice: { type: 'tool', name: 'get_weather' },
      },
    ],
    [
      'required tool choice is any',
      { model: 'm', messages: [{ role: 'user', content: 'x' }], tool_choice: 'required' },
      { tool_choice: { type: 'any' } },
    ],
    [
      'assistant tool_calls become tool_use blocks and tool messages become tool_result blocks of one user turn',
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'weather in Oslo and Rome?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
              { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_1', content: 'cold' },
          { role: 'tool', tool_call_id: 'call_2', content: 'warm' },
        ],
      },
      {
        messages: [
          { role: 'user', content: 'weather in Oslo and Rome?' },
          {
            role: 'assistant',
            content: [
              { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Oslo' } },
              { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { city: 'Rome' } },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'call_1', content: 'cold' },
              { type: 'tool_result', tool_use_id: 'call_2', content: 'warm' },
            ],
          },
        ],
      },
    ],
    [
      'stop, temperature and top_p become stop_sequences and sampling; OpenAI-only fields stay behind',
      {
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
        stop: 'END',
        temperature: 0.5,
        top_p: 0.9,
        seed: 7,
        presence_penalty: 1,
      },
      { stop_sequences: ['END'], temperature: 0.5, top_p: 0.9 },
    ],
    [
      'a data-URL image becomes a base64 image block',
      {
        model: 'm',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what is it?' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            ],
          },
        ],
      },
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what is it?' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
            ],
          },
        ],
      },
    ],
  ];
  it.each(rows)('%s', (_name, input, expected) => {
    const body = anthropicRequestOut(neutral(openAiRequestIn(input)), 'claude-x', 64);
    expect(body).toMatchObject({ model: 'claude-x', max_tokens: 64, stream: true, ...expected });
    expect(body).not.toHaveProperty('seed');
    expect(body).not.toHaveProperty('presence_penalty');
  });
});

describe('Anthropic request in, OpenAI provider out', () => {
  const rows: [string, Record<string, unknown>, Record<string, unknown>][] = [
    [
      'the system field becomes the first system message',
      { model: 'm', max_tokens: 10, system: 'be brief', messages: [{ role: 'user', content: 'hi' }] },
      {
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'hi' },
        ],
      },
    ],
    [
      'system blocks join, tools become functions, any is required',
      {
        model: 'm',
        max_tokens: 10,
        system: [{ type: 'text', text: 'a' }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
        tools: [{ name: 'get_weather', description: 'd', input_schema: weather }],
        tool_choice: { type: 'any' },
      },
      {
        messages: [
          { role: 'system', content: 'a' },
          { role: 'user', content: 'hi' },
        ],
        tools: [{ type: 'function', function: { name: 'get_weather', description: 'd', parameters: weather } }],
        tool_choice: 'required',
      },
    ],
    [
      'tool_use blocks become tool_calls and tool_result blocks become tool messages before the rest of the turn',
      {
        model: 'm',
        max_tokens: 10,
        messages: [
          { role: 'user', content: 'weather?' },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'checking' },
              { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'cold' }] },
              { type: 'text', text: 'and now?' },
            ],
          },
        ],
      },
      {
        messages: [
          { role: 'user', content: 'weather?' },
          {
            role: 'assistant',
            content: 'checking',
            tool_calls: [
              { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'toolu_1', content: 'cold' },
          { role: 'user', content: 'and now?' },
        ],
      },
    ],
    [
      'stop_sequences and sampling carry over; top_k stays behind',
      {
        model: 'm',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'x' }],
        stop_sequences: ['A', 'B'],
        temperature: 0.2,
        top_k: 5,
      },
      { stop: ['A', 'B'], temperature: 0.2 },
    ],
    [
      'a base64 image block becomes a data-URL image part',
      {
        model: 'm',
        max_tokens: 10,
        messages: [
          {
            role: 'user',
            content: [{ type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'BB' } }],
          },
        ],
      },
      {
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/jpeg;base64,BB' } }] }],
      },
    ],
  ];
  it.each(rows)('%s', (_name, input, expected) => {
    const body = openAiRequestOut(neutral(anthropicRequestIn(input)), 'gpt-x', 32);
    expect(body).toMatchObject({
      model: 'gpt-x',
      max_tokens: 32,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(body).toMatchObject(expected);
    expect(body).not.toHaveProperty('top_k');
  });
});

describe('the same dialect in and out passes through what the model does not interpret', () => {
  it('OpenAI fields such as seed, response_format and user reach an OpenAI provider unchanged', () => {
    const input = {
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      seed: 7,
      response_format: { type: 'json_object' },
      user: 'u1',
      parallel_tool_calls: false,
    };
    expect(openAiRequestOut(neutral(openAiRequestIn(input)), 'gpt', 8)).toMatchObject({
      seed: 7,
      response_format: { type: 'json_object' },
      user: 'u1',
      parallel_tool_calls: false,
    });
  });

  it("O7 an image's detail reaches an OpenAI provider, since it decides what the image costs", () => {
    const image = { type: 'image_url', image_url: { url: 'https://example.test/cat.png', detail: 'low' } };
    const input = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, image] }] };
    const request = neutral(openAiRequestIn(input));
    expect(request.messages[0]!.parts[1]).toEqual({
      type: 'image',
      url: 'https://example.test/cat.png',
      detail: 'low',
    });
    expect(openAiRequestOut(request, 'gpt', 8)['messages']).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'x' }, image] },
    ]);
  });

  it('Anthropic fields such as top_k, metadata and unknown content blocks reach an Anthropic provider unchanged', () => {
    const thinking = { type: 'thinking', thinking: 'hmm', signature: 's' };
    const input = {
      model: 'm',
      max_tokens: 5,
      top_k: 3,
      metadata: { user_id: 'u' },
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: [thinking, { type: 'text', text: 'y' }] },
      ],
    };
    expect(anthropicRequestOut(neutral(anthropicRequestIn(input)), 'c', 5)).toMatchObject({
      top_k: 3,
      metadata: { user_id: 'u' },
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: [thinking, { type: 'text', text: 'y' }] },
      ],
    });
  });
});

describe('bad input is refused naming the field', () => {
  const rows: [string, 'openai' | 'anthropic', unknown, string][] = [
    ['no messages', 'openai', { model: 'm', messages: [] }, 'messages'],
    [
      'a role that does not exist',
      'openai',
      { model: 'm', messages: [{ role: 'robot', content: 'x' }] },
      'messages[0].role',
    ],
    [
      'a temperature out of range',
      'openai',
      { model: 'm', messages: [{ role: 'user', content: 'x' }], temperature: 3 },
      'temperature',
    ],
    ['more than one choice', 'openai', { model: 'm', messages: [{ role: 'user', content: 'x' }], n: 2 }, 'n'],
    [
      'a tool without a name',
      'openai',
      { model: 'm', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: {} }] },
      'tools[0].function.name',
    ],
    ['a model that is not a string', 'openai', { model: 5, messages: [{ role: 'user', content: 'x' }] }, 'model'],
    [
      'an image detail OpenAI does not know',
      'openai',
      {
        model: 'm',
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x.test/a', detail: 'max' } }] },
        ],
      },
      'messages[0].content[0].image_url.detail',
    ],
    ['max_tokens missing', 'anthropic', { model: 'm', messages: [{ role: 'user', content: 'x' }] }, 'max_tokens'],
    [
      'a system role inside messages',
      'anthropic',
      { model: 'm', max_tokens: 1, messages: [{ role: 'system', content: 'x' }] },
      'messages[0].role',
    ],
    [
      'a tool_result without its tool_use_id',
      'anthropic',
      { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'tool_result', content: 'x' }] }] },
      'messages[0].content[0].tool_use_id',
    ],
    [
      'a server tool',
      'anthropic',
      {
        model: 'm',
        max_tokens: 1,
        messages: [{ role: 'user', content: 'x' }],
        tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      },
      'tools[0].type',
    ],
  ];
  it.each(rows)('%s', (_name, dialect, input, field) => {
    const result = dialect === 'openai' ? openAiRequestIn(input) : anthropicRequestIn(input);
    expect(result).toMatchObject({ ok: false, field });
  });
});
