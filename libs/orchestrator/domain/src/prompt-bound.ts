// The prompt's side of a hold (ADR 0042): a number of input tokens the provider cannot bill
// more than, for any input. A byte-level BPE token covers at least one byte of UTF-8, so a
// text's byte length bounds its tokens whatever the tokenizer; a model with a published
// encoding may count its texts exactly instead. To either count the chat format's framing
// is added, generously, and each image is priced by its provider's formula. What cannot be
// bounded this way (a document a provider renders into pages, audio priced apart) is refused.
import { anthropicImageTokens, imageSizeOf, openAiImageTokens } from './image-tokens.js';
import type { ChatMessage, OpaqueJson } from './work-unit.types.js';

/**
 * Framing per message. OpenAI's chat format spends 3 tokens on each (`<|im_start|>`, the role
 * separator, `<|im_end|>`) plus a newline between messages; Anthropic's turn markers are a few
 * tokens more. 8 covers both, and a message name.
 */
export const MESSAGE_FRAMING_TOKENS = 8;
/** The reply is primed with the assistant's role (`<|im_start|>assistant<|im_sep|>`: 3 tokens on OpenAI). */
export const REPLY_PRIMING_TOKENS = 8;
/**
 * Each tool call, tool result or other structured part: a tool result is a message of its own
 * on OpenAI's wire, and a tool call adds its function-call markup (3 tokens in OpenAI's format).
 */
export const PART_FRAMING_TOKENS = 8;
/** An image's block markers, on top of what its formula counts. */
export const IMAGE_FRAMING_TOKENS = 8;
/** Tool definitions are rendered into a block (`namespace functions { … }` on OpenAI, 9 tokens more than its text). */
export const TOOLS_FRAMING_TOKENS = 32;
/** Each definition is wrapped (`type <name> = (_: { … }) => any;` on OpenAI). */
export const TOOL_FRAMING_TOKENS = 16;
/** Anthropic adds a system prompt when tools are offered: 264 to 530 tokens by its published table. */
export const ANTHROPIC_TOOL_PROMPT_TOKENS = 600;

export type PromptKind = 'openai' | 'anthropic';

/** What a provider's model makes of a prompt, from its configuration. */
export interface PromptProfile {
  /** Whose chat format and image formula apply; absent (a tool server) takes the larger of both. */
  readonly kind?: PromptKind;
  /** False when the model's configuration says it takes no images: a prompt with one is refused. */
  readonly accepts_images: boolean;
  /** The most tokens one image costs on this model, where its accounting is not its provider's published formula. */
  readonly image_tokens_max?: number;
  /**
   * The model's published encoding, injected: `count` is the exact token count of a text (or
   * undefined when it declines, e.g. a text it would take too long to encode). It is used only
   * when the prompt's texts come to at most `bytes_max` bytes, so it cannot become a CPU sink.
   */
  readonly tokenizer?: { readonly count: (text: string) => number | undefined; readonly bytes_max: number };
}

/** A model nobody configured: images accepted at the largest of both formulas, bytes for text. */
export const BYTE_BOUND_PROFILE: PromptProfile = { accepts_images: true };

export type PromptBound =
  | { readonly ok: true; readonly tokens: number; readonly counted_by: 'bytes' | 'tokenizer' }
  | { readonly ok: false; readonly field: string; readonly message: string };

export type PromptRefusal = Extract<PromptBound, { ok: false }>;

/** Parts passed through to their own dialect that are text, so their bytes bound them. */
const BOUNDED_RAW_TYPES: Readonly<Record<PromptKind, readonly string[]>> = {
  openai: ['refusal'],
  anthropic: ['thinking', 'redacted_thinking', 'search_result'],
};

/**
 * Passed-through request fields that make the provider bill what the prompt does not show:
 * audio (priced apart from text tokens), predicted output (rejected predictions are billed on
 * top of max_tokens), web search results, and tool definitions the provider fetches itself.
 */
const UNBOUNDED_PASSTHROUGH = ['audio', 'prediction', 'web_search_options', 'mcp_servers', 'container'];

/** The prompt's input-token bound on a model of `profile`, or why no hold can cover it. */
export function promptTokenBound(
  messages: readonly ChatMessage[],
  options: OpaqueJson | undefined,
  profile: PromptProfile = BYTE_BOUND_PROFILE,
): PromptBound {
  const refusal = promptRefusal(messages, options, profile);
  if (refusal) return refusal;
  const tally: Tally = { texts: [], bytes: 0, tokens: REPLY_PRIMING_TOKENS };
  for (const message of messages) countMessage(message, profile, tally);
  if (options !== undefined) countOptions(options, profile, tally);
  const { tokens: textTokens, counted_by } = countTexts(tally, profile);
  const tokens = tally.tokens + tally.bytes + textTokens;
  if (!Number.isSafeInteger(tokens)) throw new Error(`prompt bound ${tokens} is not a safe integer`);
  return { ok: true, tokens, counted_by };
}

/** Why no hold can bound this prompt on a model of `profile`, naming the field; undefined when one can. */
export function promptRefusal(
  messages: readonly ChatMessage[],
  options: OpaqueJson | undefined,
  profile: PromptProfile,
): PromptRefusal | undefined {
  for (const [i, message] of messages.entries())
    for (const [j, part] of (message.parts ?? []).entries()) {
      const why = partRefusal(part, profile);
      if (why) return { ok: false, field: `messages[${i}].content[${j}]`, message: why };
    }
  const passthrough = options?.['passthrough'] as { dialect?: unknown; fields?: OpaqueJson } | undefined;
  if (passthrough?.fields && reaches(passthrough.dialect, profile)) {
    const field = UNBOUNDED_PASSTHROUGH.find((name) => Object.hasOwn(passthrough.fields!, name));
    if (field)
      return {
        ok: false,
        field,
        message: `${field} makes the provider bill what the prompt does not show, so no hold can bound the call`,
      };
  }
  return undefined;
}

/** A part of the other dialect is never sent (the translation drops it); a tool server's profile has no dialect. */
function reaches(dialect: unknown, profile: PromptProfile): boolean {
  return profile.kind === undefined || dialect === profile.kind;
}

function partRefusal(part: OpaqueJson, profile: PromptProfile): string | undefined {
  if (part['type'] === 'image' && !profile.accepts_images)
    return 'this model is configured not to accept images (accepts_images: false)';
  if (part['type'] !== 'raw' || !reaches(part['dialect'], profile)) return undefined;
  const value = (part['value'] ?? {}) as OpaqueJson;
  const type = typeof value['type'] === 'string' ? value['type'] : 'untyped';
  const dialect = part['dialect'] as PromptKind;
  if (BOUNDED_RAW_TYPES[dialect]?.includes(type)) return undefined;
  if (
    dialect === 'anthropic' &&
    type === 'document' &&
    (value['source'] as OpaqueJson | undefined)?.['type'] === 'text'
  )
    return undefined;
  return `a ${type} part can cost more tokens than its size shows, or cost them at another price, so no hold can bound it`;
}

/** Texts that may be counted exactly, bytes that only their length bounds, and tokens already known. */
interface Tally {
  readonly texts: string[];
  bytes: number;
  tokens: number;
}

function countMessage(message: ChatMessage, profile: PromptProfile, tally: Tally): void {
  tally.tokens += MESSAGE_FRAMING_TOKENS;
  tally.texts.push(message.role);
  // Parts, when present, are what is sent; the content is their text, kept for the session log.
  if (message.parts === undefined) tally.texts.push(message.content);
  else for (const part of message.parts) countPart(part, profile, tally);
}

function countPart(part: OpaqueJson, profile: PromptProfile, tally: Tally): void {
  switch (part['type']) {
    case 'text':
      return text(part['text'], tally);
    case 'image':
      tally.tokens += IMAGE_FRAMING_TOKENS + imageTokens(part, profile);
      return;
    case 'tool_call':
      tally.tokens += PART_FRAMING_TOKENS;
      text(part['id'], tally);
      text(part['name'], tally);
      // OpenAI receives the arguments as written; Anthropic receives them parsed and written again.
      if (profile.kind === 'openai') text(part['arguments'], tally);
      else tally.bytes += rewrittenArgumentsBytes(part['arguments']);
      return;
    case 'tool_result':
      tally.tokens += PART_FRAMING_TOKENS;
      text(part['tool_call_id'], tally);
      text(part['content'], tally);
      return;
    default:
      // A raw part (or one this release does not know): its JSON is longer than the text it carries.
      tally.tokens += PART_FRAMING_TOKENS;
      tally.bytes += utf8Bytes(JSON.stringify(part['type'] === 'raw' ? (part['value'] ?? {}) : part));
  }
}

function text(value: unknown, tally: Tally): void {
  if (typeof value === 'string') tally.texts.push(value);
  else if (value !== undefined) tally.bytes += utf8Bytes(JSON.stringify(value));
}

/** The parse-and-write-again of an Anthropic tool input can lengthen it (`1e20` → 21 digits): the longer of both. */
function rewrittenArgumentsBytes(value: unknown): number {
  const written = typeof value === 'string' ? value : JSON.stringify(value ?? '');
  let rewritten: string;
  try {
    rewritten = JSON.stringify({ value: JSON.parse(written) as unknown });
  } catch {
    rewritten = JSON.stringify({ _raw: written });
  }
  return Math.max(utf8Bytes(written), utf8Bytes(rewritten));
}

function imageTokens(part: OpaqueJson, profile: PromptProfile): number {
  if (profile.image_tokens_max !== undefined) return profile.image_tokens_max;
  const size = typeof part['data'] === 'string' ? imageSizeOf(part['data']) : undefined;
  const detail = typeof part['detail'] === 'string' ? part['detail'] : undefined;
  if (profile.kind === 'openai') return openAiImageTokens(size, detail);
  if (profile.kind === 'anthropic') return anthropicImageTokens(size);
  return Math.max(openAiImageTokens(size, detail), anthropicImageTokens(size));
}

/**
 * Tool definitions, tool choice, sampling and passed-through fields, by their JSON's bytes:
 * each provider renders definitions its own way (OpenAI as TypeScript-like declarations), and
 * none renders them longer than their JSON plus the framing counted here.
 */
function countOptions(options: OpaqueJson, profile: PromptProfile, tally: Tally): void {
  tally.bytes += utf8Bytes(JSON.stringify(options));
  const tools = Array.isArray(options['tools']) ? options['tools'].length : 0;
  if (tools === 0) return;
  tally.tokens += TOOLS_FRAMING_TOKENS + TOOL_FRAMING_TOKENS * tools;
  if (profile.kind !== 'openai') tally.tokens += ANTHROPIC_TOOL_PROMPT_TOKENS;
}

function countTexts(tally: Tally, profile: PromptProfile): { tokens: number; counted_by: 'bytes' | 'tokenizer' } {
  const bytes = tally.texts.map(utf8Bytes);
  const textBytes = bytes.reduce((sum, b) => sum + b, 0);
  const tokenizer = profile.tokenizer;
  if (tokenizer === undefined || textBytes + tally.bytes > tokenizer.bytes_max)
    return { tokens: textBytes, counted_by: 'bytes' };
  let tokens = 0;
  for (const [i, t] of tally.texts.entries()) {
    const counted = tokenizer.count(t);
    if (counted !== undefined && !(Number.isSafeInteger(counted) && counted >= 0))
      throw new Error(`the tokenizer counted ${counted} tokens: not a non-negative integer`);
    tokens += counted ?? bytes[i]!;
  }
  return { tokens, counted_by: 'tokenizer' };
}

/** The text's length in UTF-8, as sent: a lone surrogate goes out as U+FFFD, three bytes. */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}
