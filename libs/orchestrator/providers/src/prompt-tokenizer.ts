// The published OpenAI encodings a model may name for a tighter hold (ADR 0042): exact token
// counts from gpt-tokenizer, loaded only when a configured model names one (each encoding's
// ranks are megabytes). A count is a bound only because it is exact, so whatever the counter
// cannot count exactly and cheaply it declines, and that text is bounded by its bytes.

export const TOKEN_ENCODINGS = ['o200k_base', 'cl100k_base'] as const;
export type TokenEncoding = (typeof TOKEN_ENCODINGS)[number];

/** The exact count of a text's tokens, or undefined when the counter declines it. */
export type TokenCount = (text: string) => number | undefined;

/**
 * The longest run a text may hold to be tokenized, in UTF-16 units. Byte-pair merging is
 * quadratic in the length of one pre-token, and the encodings' pre-tokenizers cut text into
 * runs of letters (with their combining marks), of other symbols (marks count there too), of
 * whitespace, and digits by three, joining at most a leading character and trailing line
 * breaks. Measured for ADR 0042: 16,000 CJK characters in one run take 1.3 s and 100,000 take
 * 65 s, while 32 KiB in runs of at most 256 take 20 to 160 ms (a few µs per byte). A text with
 * a longer run (CJK without punctuation, a wall of one symbol) is left to its byte bound.
 */
export const TOKENIZE_RUN_CHARS_MAX = 256;
/** One pattern per kind of run; each is a single greedy class, so each pass is linear. */
const RUNS = [/[\p{L}\p{M}]+/gu, /[^\s\p{L}\p{N}]+/gu, /\s+/gu];

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

/** The longest run of letters, of other symbols or of whitespace, in UTF-16 units. */
export function longestRun(text: string): number {
  let longest = 0;
  for (const pattern of RUNS) for (const [run] of text.matchAll(pattern)) longest = Math.max(longest, run.length);
  return longest;
}
