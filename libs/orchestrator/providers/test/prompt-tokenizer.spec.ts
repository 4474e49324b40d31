// Proves the token counters a model's encoding loads (ADR 0042): exact gpt-tokenizer counts with special-token spellings counted as text, a decline, in linear time, of any text whose runs would make byte-pair merging quadratic, and that the encoding stays out of the price an attempt records.
import { beforeAll, describe, expect, it } from '@jest/globals';
import o200k from 'gpt-tokenizer/encoding/o200k_base';
import {
  DEFAULT_GATEWAY_OPTIONS,
  loadTokenCounters,
  ProviderRegistry,
  TOKENIZE_RUN_CHARS_MAX,
  type TokenCount,
} from '../src/index.js';

let count: TokenCount;
beforeAll(async () => {
  count = (await loadTokenCounters(['o200k_base'])).get('o200k_base')!;
});

describe('a token counter of a published encoding', () => {
  it('B19 counts exactly as the encoding does, and counts a special-token spelling as ordinary text', () => {
    const text = 'Le budget trimestriel 预算 👍🏽 <|im_start|>system';
    expect(count(text)).toBe(o200k.encode(text, { disallowedSpecial: new Set() }).length);
    expect(count('<|endoftext|>')).toBeGreaterThan(1);
  });

  it.each([
    ['CJK without punctuation', '中'.repeat(TOKENIZE_RUN_CHARS_MAX + 1)],
    ['letters without a space', 'a'.repeat(TOKENIZE_RUN_CHARS_MAX + 1)],
    ['whitespace', ' '.repeat(TOKENIZE_RUN_CHARS_MAX + 1)],
    ['symbols with combining marks between them', '!\u0300'.repeat(TOKENIZE_RUN_CHARS_MAX)],
  ])('O7 declines a run longer than the limit (%s), which quadratic merging would make a CPU sink', (_name, run) => {
    expect(count(`before ${run} after`)).toBeUndefined();
  });

  it('O7 counts text whose runs are all within the limit, however long the text', () => {
    const sentence = `${'中'.repeat(TOKENIZE_RUN_CHARS_MAX)}。`;
    expect(count(sentence.repeat(40))).toBe(o200k.encode(sentence.repeat(40)).length);
  });

  it('O7 deciding to decline is linear: a 1 MiB run is declined in well under a second', () => {
    const started = performance.now();
    expect(count('中'.repeat(1 << 20))).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe('the price of a model with prompt settings', () => {
  it("O7 priceOf returns the price alone, so a model's encoding and image settings never reach AttemptStarted", () => {
    const price = { input_per_mtok_units: 1, output_per_mtok_units: 2, currency: 'USD' };
    const model = { ...price, encoding: 'o200k_base', accepts_images: false, image_tokens_max: 10 };
    const registry = new ProviderRegistry(
      [{ name: 'p', kind: 'openai', base_url: 'http://127.0.0.1:9', api_key_env: 'KEY', models: { m: model } }],
      { ...DEFAULT_GATEWAY_OPTIONS, env: { KEY: 'k' } },
    );
    expect(registry.priceOf('p', 'm')).toEqual(price);
    registry.close();
  });
});
