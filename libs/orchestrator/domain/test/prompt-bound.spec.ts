// Proves the prompt's side of a hold (ADR 0042): UTF-8 bytes plus framing for every text that reaches the provider, images by their providers' formulas, an injected exact count only where it stays a bound, and refusals naming the field for what no hold can cover.
import { describe, expect, it } from '@jest/globals';
import {
  ANTHROPIC_IMAGE_TOKENS_MAX,
  ANTHROPIC_TOOL_PROMPT_TOKENS,
  IMAGE_FRAMING_TOKENS,
  MESSAGE_FRAMING_TOKENS,
  OPENAI_IMAGE_TOKENS_MAX,
  PART_FRAMING_TOKENS,
  REPLY_PRIMING_TOKENS,
  TOOLS_FRAMING_TOKENS,
  TOOL_FRAMING_TOKENS,
  anthropicImageTokens,
  imageSizeOf,
  openAiImageTokens,
  promptTokenBound,
  utf8Bytes,
  worstCaseCostUnits,
  type ChatMessage,
  type OpaqueJson,
  type PromptProfile,
} from '../src/index.js';

const FRAMED = MESSAGE_FRAMING_TOKENS + REPLY_PRIMING_TOKENS;
const OPENAI: PromptProfile = { kind: 'openai', accepts_images: true };
const ANTHROPIC: PromptProfile = { kind: 'anthropic', accepts_images: true };
const cjk = '预算'.repeat(600);

function tokens(messages: ChatMessage[], options?: OpaqueJson, profile?: PromptProfile): number {
  const bound = promptTokenBound(messages, options, profile);
  if (!bound.ok) throw new Error(`${bound.field}: ${bound.message}`);
  return bound.tokens;
}

const user = (content: string, parts?: OpaqueJson[]): ChatMessage => ({
  role: 'user',
  content,
  ...(parts ? { parts } : {}),
});
const b64 = (bytes: number[]) => Buffer.from(bytes).toString('base64');
const be32 = (n: number) => [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
const png = (w: number, h: number) =>
  b64([0x89, 0x50, 0x4e, 0x47, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, ...be32(w), ...be32(h), 8, 2, 0, 0, 0]);
const jpeg = (w: number, h: number) =>
  b64([
    0xff,
    0xd8,
    0xff,
    0xe0,
    0,
    16,
    ...Array<number>(14).fill(0),
    0xff,
    0xc0,
    0,
    17,
    8,
    h >> 8,
    h & 255,
    w >> 8,
    w & 255,
    3,
  ]);
const riff = (chunk: string, body: number[]) =>
  b64([...Buffer.from('RIFF'), 0, 0, 0, 0, ...Buffer.from('WEBP'), ...Buffer.from(chunk), 10, 0, 0, 0, ...body]);

describe('the byte bound of text', () => {
  it('O7 B19 a 1,200-character CJK prompt is held at its 3,600 UTF-8 bytes plus framing, not at characters ÷ 4', () => {
    expect(utf8Bytes(cjk)).toBe(3_600);
    expect(tokens([user(cjk)])).toBe(utf8Bytes('user') + 3_600 + FRAMED);
  });

  it('B19 UTF-8 is counted as sent: emoji are four bytes, combining marks two, a lone surrogate goes out as three', () => {
    expect(utf8Bytes('a👍🏽é\u0301')).toBe(1 + 4 + 4 + 2 + 2);
    expect(utf8Bytes('\ud800x')).toBe(3 + 1);
  });

  it('B19 structured parts replace the content they summarize: the text is counted once, as sent', () => {
    const parts = [{ type: 'text', text: 'look' }];
    expect(tokens([user('look', parts)])).toBe(tokens([user('look')]));
  });

  it('B19 tool calls, tool results and their ids and names are prompt, each with its framing', () => {
    const call = { type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' };
    const result = { type: 'tool_result', tool_call_id: 'call_1', content: '晴' };
    const messages = [
      { role: 'assistant', content: '', parts: [call] },
      { role: 'tool', content: '晴', parts: [result] },
    ];
    const texts = ['assistant', 'call_1', 'get_weather', '{"city":"Paris"}', 'tool', 'call_1', '晴'];
    const bytes = texts.reduce((n, t) => n + utf8Bytes(t), 0);
    expect(tokens(messages, undefined, OPENAI)).toBe(
      bytes + 2 * MESSAGE_FRAMING_TOKENS + REPLY_PRIMING_TOKENS + 2 * PART_FRAMING_TOKENS,
    );
  });

  it('B19 an Anthropic tool input is parsed and written again, so the longer writing is held (1e20 is 21 digits)', () => {
    const call = { type: 'tool_call', id: 'i', name: 'n', arguments: '1e20' };
    const openai = tokens([{ role: 'assistant', content: '', parts: [call] }], undefined, OPENAI);
    const anthropic = tokens([{ role: 'assistant', content: '', parts: [call] }], undefined, ANTHROPIC);
    expect(anthropic - openai).toBe(utf8Bytes(JSON.stringify({ value: 1e20 })) - 4);
  });

  it('B19 tool definitions count by their JSON with framing, and Anthropic adds its tool-use system prompt', () => {
    const options = { tools: [{ name: 'f', parameters: { type: 'object' } }], sampling: { temperature: 0 } };
    const base = tokens([user('x')], undefined, OPENAI);
    const framing = utf8Bytes(JSON.stringify(options)) + TOOLS_FRAMING_TOKENS + TOOL_FRAMING_TOKENS;
    expect(tokens([user('x')], options, OPENAI)).toBe(base + framing);
    expect(tokens([user('x')], options, ANTHROPIC)).toBe(base + framing + ANTHROPIC_TOOL_PROMPT_TOKENS);
  });
});

describe("images by their providers' published formulas", () => {
  it.each([
    ['1024 × 1024 is four tiles', { width: 1024, height: 1024 }, undefined, 765],
    ['2048 × 4096 fits in 2048, then 768 × 1536: six tiles', { width: 2048, height: 4096 }, undefined, 1_105],
    ['a small image is held as if scaled up to 768 on its short side', { width: 100, height: 100 }, undefined, 765],
    ['low detail is 85 whatever the size', { width: 4000, height: 4000 }, 'low', 85],
    ['an unknown size costs the most: 2 × 4 tiles', undefined, 'high', OPENAI_IMAGE_TOKENS_MAX],
  ])('B19 OpenAI: %s', (_name, size, detail, expected) => {
    expect(openAiImageTokens(size, detail)).toBe(expected);
  });

  it.each([
    ['1000 × 1000 is width × height / 750, rounded up', { width: 1000, height: 1000 }, 1_334],
    ['200 × 200', { width: 200, height: 200 }, 54],
    ['3000 × 1500 is scaled to 1568 × 784 first', { width: 3000, height: 1500 }, 1_640],
    ['an unknown size costs a 1568-pixel square', undefined, ANTHROPIC_IMAGE_TOKENS_MAX],
  ])('B19 Anthropic: %s', (_name, size, expected) => {
    expect(anthropicImageTokens(size)).toBe(expected);
  });

  it.each([
    ['PNG', png(640, 480)],
    ['JPEG, past an APP0 segment', jpeg(640, 480)],
    ['WebP VP8X', riff('VP8X', [0, 0, 0, 0, 0x7f, 2, 0, 0xdf, 1, 0])],
    ['WebP VP8L', riff('VP8L', [0x2f, 0x7f, 0xc2, 0x77, 0])],
    ['WebP VP8', riff('VP8 ', [0, 0, 0, 0x9d, 1, 0x2a, 0x80, 2, 0xe0, 1])],
  ])('B19 an inline image is sized by its header: %s', (_name, data) => {
    expect(imageSizeOf(data)).toEqual({ width: 640, height: 480 });
  });

  it('B19 an image whose header cannot be read, or one by URL, is held at the provider maximum', () => {
    expect(imageSizeOf('R0lGODlhAQABAAAAACw=')).toBeUndefined();
    const byUrl = { type: 'image', url: 'https://example.test/cat.png' };
    const plain = tokens([user('')], undefined, ANTHROPIC);
    expect(tokens([user('', [byUrl])], undefined, ANTHROPIC)).toBe(
      plain + IMAGE_FRAMING_TOKENS + ANTHROPIC_IMAGE_TOKENS_MAX,
    );
    // A model of no configured kind takes the larger formula of both.
    expect(tokens([user('', [byUrl])]) - tokens([user('')])).toBe(IMAGE_FRAMING_TOKENS + ANTHROPIC_IMAGE_TOKENS_MAX);
  });

  it('B19 an inline image is held by its size, and its base64 is not counted as text', () => {
    const image = { type: 'image', media_type: 'image/png', data: png(200, 200) };
    const plain = tokens([user('')], undefined, ANTHROPIC);
    expect(tokens([user('', [image])], undefined, ANTHROPIC)).toBe(plain + IMAGE_FRAMING_TOKENS + 54);
  });

  it("B19 a model's image_tokens_max replaces the formula for every image", () => {
    const image = { type: 'image', media_type: 'image/png', data: png(200, 200) };
    const profile = { ...OPENAI, image_tokens_max: 48_169 };
    expect(tokens([user('', [image])], undefined, profile) - tokens([user('')], undefined, profile)).toBe(
      IMAGE_FRAMING_TOKENS + 48_169,
    );
  });
});

describe('what no hold can bound is refused, naming the field', () => {
  const image = { type: 'image', url: 'https://example.test/cat.png' };

  it('O7 an image for a model configured without images is refused', () => {
    const bound = promptTokenBound([user('x'), user('look', [{ type: 'text', text: 'look' }, image])], undefined, {
      kind: 'openai',
      accepts_images: false,
    });
    expect(bound).toMatchObject({ ok: false, field: 'messages[1].content[1]' });
  });

  it('O7 audio and files are refused where they would be sent, and held by their bytes where the translation drops them', () => {
    const audio = { type: 'raw', dialect: 'openai', value: { type: 'input_audio', input_audio: { data: 'AAAA' } } };
    expect(promptTokenBound([user('', [audio])], undefined, OPENAI)).toMatchObject({
      ok: false,
      field: 'messages[0].content[0]',
      message: expect.stringContaining('input_audio') as unknown as string,
    });
    expect(promptTokenBound([user('', [audio])], undefined, ANTHROPIC)).toMatchObject({ ok: true });
    const pdf = { type: 'raw', dialect: 'anthropic', value: { type: 'document', source: { type: 'base64' } } };
    expect(promptTokenBound([user('', [pdf])], undefined, ANTHROPIC)).toMatchObject({ ok: false });
  });

  it('B19 text-only passed-through parts (thinking, a text document) are held by their JSON bytes', () => {
    const thinking = { type: 'thinking', thinking: '想', signature: 'sig' };
    const text = { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'doc' } };
    const parts = [thinking, text].map((value) => ({ type: 'raw', dialect: 'anthropic', value }));
    const bytes = utf8Bytes(JSON.stringify(thinking)) + utf8Bytes(JSON.stringify(text));
    expect(tokens([user('', parts)], undefined, ANTHROPIC) - tokens([user('')], undefined, ANTHROPIC)).toBe(
      bytes + 2 * PART_FRAMING_TOKENS,
    );
  });

  it('O7 a passed-through field that bills beyond the prompt (prediction) is refused for its own dialect', () => {
    const options = { passthrough: { dialect: 'openai', fields: { prediction: { type: 'content', content: 'x' } } } };
    expect(promptTokenBound([user('x')], options, OPENAI)).toMatchObject({ ok: false, field: 'prediction' });
    expect(promptTokenBound([user('x')], options, ANTHROPIC)).toMatchObject({ ok: true });
  });
});

describe('an injected exact count', () => {
  // A stand-in encoding: one token per word, exact for this test's texts.
  const words = (text: string) => text.split(' ').filter(Boolean).length;
  const counted = (bytesMax: number, count: (text: string) => number | undefined = words): PromptProfile => ({
    ...OPENAI,
    tokenizer: { count, bytes_max: bytesMax },
  });

  it('B19 counts each text exactly, plus the same framing as the byte bound', () => {
    const bound = promptTokenBound([user('one two three')], undefined, counted(1_000));
    expect(bound).toEqual({ ok: true, tokens: 1 + 3 + FRAMED, counted_by: 'tokenizer' });
  });

  it('B19 a prompt above bytes_max is held at its bytes, untokenized, so tokenizing stays a bounded cost', () => {
    let calls = 0;
    const profile = counted(10, (t) => (calls++, words(t)));
    expect(promptTokenBound([user('one two three')], undefined, profile)).toEqual({
      ok: true,
      tokens: tokens([user('one two three')]),
      counted_by: 'bytes',
    });
    expect(calls).toBe(0);
  });

  it('B19 a text the counter declines is held at its bytes', () => {
    const profile = counted(1_000, (t) => (t === 'user' ? 1 : undefined));
    expect(promptTokenBound([user('one two three')], undefined, profile)).toMatchObject({ tokens: 1 + 13 + FRAMED });
  });
});

describe('the hold', () => {
  it('O7 is input price × the prompt bound + output price × max_tokens, rounded up, plus any per-call price', () => {
    const price = { input_per_mtok_units: 1_000_000, output_per_mtok_units: 2_000_000, currency: 'USD' };
    expect(worstCaseCostUnits(price, 3_620, 16)).toBe(3_652n);
    expect(worstCaseCostUnits({ ...price, input_per_mtok_units: 1 }, 3, 0)).toBe(1n);
    expect(worstCaseCostUnits({ ...price, per_call_units: 5 }, 0, 0)).toBe(5n);
  });
});
