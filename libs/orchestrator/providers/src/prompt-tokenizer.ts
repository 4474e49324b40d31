// The published OpenAI encodings a model may name for a tighter hold (ADR 0042): exact token
// counts from gpt-tokenizer, loaded only when a configured model names one (each encoding's
// ranks are megabytes). A count is a bound only because it is exact, so whatever the counter
// cannot count exactly and cheaply it declines, and that text is bounded by its bytes.

export const TOKEN_ENCODINGS = ['o200k_base', 'cl100k_base'] as const;
export type TokenEncoding = (typeof TOKEN_ENCODINGS)[number];

/** The exact count of a text's tokens, or undefined when the counter declines it. */
export type TokenCount = (text: string) => number | undefined;

/**
 * The longest run of whitespace or of non-whitespace a text may hold to be tokenized. Byte-pair
 * merging is quadratic in the length of one pre-token, and a pre-token never spans more than
 * two such runs (punctuation may take the line breaks after it). Measured for ADR 0042: 16,000
 * CJK characters without a space take 1.3 s and 100,000 take 65 s, while text whose runs are at
 * most 1,024 characters encodes at about 2 µs per byte. A text with a longer run is left to its
 * byte bound.
 */
export const TOKENIZE_RUN_CHARS_MAX = 1_024;

interface Encoder {
  countTokens(text: string, options: { disallowedSpecial: Set<string> }): number;
}

/**
 * Loads each named encoding once. Text that spells a special token (`<|im_start|>`) is counted
 * as ordinary text, which is how the provider encodes what a caller sends.
 */
export async function loadTokenCounters(encodings: Iterable<TokenEncoding>): Promise<Map<TokenEncoding, TokenCount>> {
  const counters = new Map<TokenEncoding, TokenCount>();
  for (const encoding of new Set(encodings)) counters.set(encoding, counterOf(await encoderOf(encoding)));
  return counters;
}

async function encoderOf(encoding: TokenEncoding): Promise<Encoder> {
  switch (encoding) {
    case 'o200k_base':
      return import('gpt-tokenizer/encoding/o200k_base');
    case 'cl100k_base':
      return import('gpt-tokenizer/encoding/cl100k_base');
  }
}

function counterOf(encoder: Encoder): TokenCount {
  const asText = { disallowedSpecial: new Set<string>() };
  return (text) => (longestRun(text) > TOKENIZE_RUN_CHARS_MAX ? undefined : encoder.countTokens(text, asText));
}

/** The longest run of whitespace or of non-whitespace, in UTF-16 units, in one linear pass. */
export function longestRun(text: string): number {
  let longest = 0;
  let run = 0;
  let spaces = false;
  for (let i = 0; i < text.length; i++) {
    const space = isSpace(text.charCodeAt(i));
    run = space === spaces ? run + 1 : 1;
    spaces = space;
    if (run > longest) longest = run;
  }
  return longest;
}

/** The tokenizers' whitespace: what `\s` matches in their pre-tokenizing patterns. */
function isSpace(code: number): boolean {
  return (
    (code >= 0x09 && code <= 0x0d) ||
    code === 0x20 ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}
