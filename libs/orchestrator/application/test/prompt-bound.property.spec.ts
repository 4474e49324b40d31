// Proves ADR 0042's prompt bound against gpt-tokenizer's published OpenAI encodings (o200k_base, cl100k_base): for random Unicode prompts (CJK, emoji, combining marks, code, whitespace runs, special-token spellings, mixed), with tool calls and tool definitions, the hold's prompt tokens are never below the encoding's count of the same prompt, for the byte bound and for the tokenizer-based bound.
import { beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import cl100k from 'gpt-tokenizer/encoding/cl100k_base';
import o200k from 'gpt-tokenizer/encoding/o200k_base';
import { computeChatCompletionTokenCount, type ChatCompletionFunctionProperty } from 'gpt-tokenizer/functionCalling';
import { promptTokenBound, type ChatMessage, type OpaqueJson, type PromptProfile } from '@tally/orchestrator-domain';
import { loadTokenCounters, type TokenCount, type TokenEncoding } from '@tally/orchestrator-providers';

/** Special-token spellings in a caller's text are text to the provider, and to the reference count. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };
const ENCODINGS = [
  { name: 'o200k_base', chat: 'gpt-4o', encoder: o200k },
  { name: 'cl100k_base', chat: 'gpt-4', encoder: cl100k },
] as const;

let counters: Map<TokenEncoding, TokenCount>;
beforeAll(async () => {
  counters = await loadTokenCounters(['o200k_base', 'cl100k_base']);
});

/** The byte bound, and the bound that counts each text with the encoding under test. */
function profiles(encoding: TokenEncoding): [string, PromptProfile][] {
  const count = counters.get(encoding)!;
  return [
    ['byte bound', { kind: 'openai', accepts_images: true }],
    ['tokenizer bound', { kind: 'openai', accepts_images: true, tokenizer: { count, bytes_max: 1_048_576 } }],
  ];
}

function bound(messages: ChatMessage[], options: OpaqueJson | undefined, profile: PromptProfile): number {
  const result = promptTokenBound(messages, options, profile);
  if (!result.ok) throw new Error(`${result.field}: ${result.message}`);
  return result.tokens;
}

const joined = (parts: fc.Arbitrary<string[]>) => parts.map((p) => p.join(''));
const codePoints = (min: number, max: number, maxLength: number) =>
  fc.array(fc.integer({ min, max }), { maxLength }).map((cps) => String.fromCodePoint(...cps));
const cjk = codePoints(0x4e00, 0x9fff, 300);
const emoji = joined(
  fc.array(fc.constantFrom('😀', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇫🇷', '❤️', '🫠', '🧑🏿‍🚀', '🀄'), { maxLength: 80 }),
);
const combining = joined(
  fc.array(
    fc
      .tuple(fc.constantFrom('a', 'e', 'ы', 'ק', 'ก', '한'), codePoints(0x300, 0x36f, 16))
      .map(([base, marks]) => base + marks),
    { maxLength: 40 },
  ),
);
const code = joined(
  fc.array(
    fc.constantFrom('const x = 1;', '{', '}', ' => ', '\t', '\n', 'if (a && b)', '0x7f', '1234567', '///', '"\\u00e9"'),
    { maxLength: 60 },
  ),
);
const specials = joined(
  fc.array(fc.constantFrom('<|im_start|>', '<|im_end|>', '<|endoftext|>', '<|', '|>'), { maxLength: 8 }),
);
const whitespace = joined(
  fc.array(fc.constantFrom(' ', '   ', '\n', '\r\n', '\t', '\u3000', '\u00a0'), { maxLength: 400 }),
);
/** Runs longer than the counter takes: it declines them, and they are held by their bytes (rare: they are slow to count). */
const longRun = fc
  .tuple(fc.constantFrom('a', '中', ' ', '!', '!\u0300'), fc.integer({ min: 257, max: 1_200 }))
  .map(([c, n]) => c.repeat(n));
const unicode = fc.string({ unit: 'binary', maxLength: 200 });
const piece = fc.oneof(cjk, emoji, combining, code, specials, whitespace, unicode);
const text = fc.oneof(
  { arbitrary: piece, weight: 10 },
  { arbitrary: joined(fc.array(piece, { maxLength: 5 })), weight: 10 },
  { arbitrary: longRun, weight: 1 },
);

const chat = fc.array(fc.record({ role: fc.constantFrom('system', 'user', 'assistant'), content: text }), {
  minLength: 1,
  maxLength: 6,
});

describe('ADR 0042 the prompt bound is never below what an OpenAI encoding counts', () => {
  for (const { name, chat: model, encoder } of ENCODINGS)
    it(`B19 O7 random Unicode chats: the hold's prompt tokens ≥ ${name}'s count of the chat (byte and tokenizer bounds)`, () => {
      fc.assert(
        fc.property(chat, (messages) => {
          const reference = encoder.encodeChat(messages, model, AS_TEXT).length;
          for (const [, profile] of profiles(name))
            expect(bound(messages, undefined, profile)).toBeGreaterThanOrEqual(reference);
        }),
        { numRuns: 200 },
      );
    });

  const identifier = fc.stringMatching(/^[a-z_][a-z0-9_]{0,24}$/);
  const { property } = fc.letrec<{ property: ChatCompletionFunctionProperty }>((tie) => ({
    property: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.record(
        { type: fc.constant('string' as const), description: text, enum: fc.array(text, { maxLength: 4 }) },
        { requiredKeys: ['type'] },
      ),
      fc.record(
        { type: fc.constantFrom('integer' as const, 'number' as const), description: text },
        { requiredKeys: ['type'] },
      ),
      fc.record({ type: fc.constant('boolean' as const), description: text }, { requiredKeys: ['type'] }),
      fc.record({ type: fc.constant('array' as const), items: tie('property') }, { requiredKeys: ['type'] }),
      fc.record(
        {
          type: fc.constant('object' as const),
          description: text,
          properties: fc.dictionary(identifier, tie('property'), { maxKeys: 4 }),
        },
        { requiredKeys: ['type'] },
      ),
    ),
  }));
  const tool = fc.record(
    {
      name: identifier,
      description: text,
      parameters: fc.record({
        type: fc.constant('object' as const),
        properties: fc.dictionary(identifier, property, { maxKeys: 6 }),
      }),
    },
    { requiredKeys: ['name', 'parameters'] },
  );
  const turn = fc.oneof(
    fc.record({ role: fc.constantFrom('system', 'user'), content: text }),
    fc.record({ role: fc.constant('assistant'), name: identifier, arguments: text }),
  );

  for (const { name, encoder } of ENCODINGS)
    it(`B19 O7 random tool definitions and tool calls: the hold's prompt tokens ≥ ${name}'s count in OpenAI's function format`, () => {
      const count = (t: string) => encoder.encode(t, AS_TEXT).length;
      fc.assert(
        fc.property(
          fc.array(turn, { minLength: 1, maxLength: 5 }),
          fc.array(tool, { minLength: 1, maxLength: 4 }),
          (turns, tools) => {
            const reference = computeChatCompletionTokenCount(
              {
                messages: turns.map((t) =>
                  'content' in t
                    ? t
                    : { role: 'assistant', content: '', function_call: { name: t.name, arguments: t.arguments } },
                ),
                functions: tools,
              },
              count,
            );
            const messages: ChatMessage[] = turns.map((t, i) =>
              'content' in t
                ? t
                : {
                    role: 'assistant',
                    content: '',
                    parts: [{ type: 'tool_call', id: `call_${i}`, name: t.name, arguments: t.arguments }],
                  },
            );
            for (const [, profile] of profiles(name))
              expect(bound(messages, { tools }, profile)).toBeGreaterThanOrEqual(reference);
          },
        ),
        { numRuns: 100 },
      );
    });

  it("O7 B19 the issue's 1,200-character Chinese prompt: o200k_base counts more than 1,000 tokens, and both bounds hold it", () => {
    // 1,200 distinct-looking characters of the CJK block, as a Chinese prompt is.
    const prompt = Array.from({ length: 1_200 }, (_, k) => String.fromCodePoint(0x4e00 + ((k * 7_919) % 20_902))).join(
      '',
    );
    const messages = [{ role: 'user', content: prompt }];
    const reference = o200k.encodeChat(messages, 'gpt-4o', AS_TEXT).length;
    expect(reference).toBeGreaterThan(1_000);
    const [[, bytes], [, tokenizer]] = profiles('o200k_base');
    expect(bound(messages, undefined, bytes!)).toBe(4 + 3_600 + 16);
    expect(bound(messages, undefined, tokenizer!)).toBeGreaterThanOrEqual(reference);
  });
});
