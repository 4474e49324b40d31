// The dialect-neutral model of one chat call: what an OpenAI Chat Completions or an
// Anthropic Messages request, reply, stream or error means, independent of either wire.
// Each dialect translates into it and out of it (pure functions, no I/O), so either
// dialect can come in and either provider kind can go out.

export type Dialect = 'openai' | 'anthropic';

export type JsonObject = { [key: string]: unknown };

/** One piece of a message. `raw` is a part neither side models: it passes through to its own dialect only. */
export type Part =
  | { readonly type: 'text'; readonly text: string }
  /**
   * An image, as the dialect it came in wrote it (OpenAI `image_url`, Anthropic `source`);
   * `detail` is OpenAI's, sent on to an OpenAI-kind provider (it decides what the image costs).
   */
  | {
      readonly type: 'image';
      readonly url?: string;
      readonly media_type?: string;
      readonly data?: string;
      readonly detail?: 'low' | 'high' | 'auto';
    }
  /** The model asks for a tool; `arguments` is the JSON text of its input. */
  | { readonly type: 'tool_call'; readonly id: string; readonly name: string; readonly arguments: string }
  | {
      readonly type: 'tool_result';
      readonly tool_call_id: string;
      readonly content: string;
      readonly is_error?: boolean;
    }
  | { readonly type: 'raw'; readonly dialect: Dialect; readonly value: JsonObject };

export type Role = 'system' | 'user' | 'assistant' | 'tool';

export interface NeutralMessage {
  readonly role: Role;
  readonly parts: readonly Part[];
}

export interface ToolDefinition {
  readonly name: string;
  readonly description?: string;
  /** JSON Schema of the tool's input. */
  readonly parameters: JsonObject;
}

export type ToolChoice =
  | { readonly type: 'auto' }
  | { readonly type: 'none' }
  | { readonly type: 'required' }
  | { readonly type: 'tool'; readonly name: string };

/** Sampling fields both dialects understand; anything else rides in `passthrough`. */
export interface Sampling {
  readonly temperature?: number;
  readonly top_p?: number;
  readonly stop?: readonly string[];
}

export interface NeutralRequest {
  /** As the caller wrote it: `<provider>/<model>` or a bare model name. */
  readonly model: string;
  readonly messages: readonly NeutralMessage[];
  readonly tools?: readonly ToolDefinition[];
  readonly tool_choice?: ToolChoice;
  readonly max_tokens?: number;
  readonly sampling: Sampling;
  readonly stream: boolean;
  /** Fields this model does not interpret, by the dialect they came in: sent on to a provider of that kind only. */
  readonly passthrough?: { readonly dialect: Dialect; readonly fields: JsonObject };
}

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'content_filter';

export interface NeutralUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
}

/** A whole reply: text and tool calls in the order the model produced them. */
export interface NeutralReply {
  readonly parts: readonly Part[];
  readonly stop_reason: StopReason;
  readonly usage?: NeutralUsage;
}

/** One streamed piece of a reply, as a provider emits it. `index` numbers the tool calls of the reply from 0. */
export type Delta =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'tool_call_start'; readonly index: number; readonly id: string; readonly name: string }
  | { readonly kind: 'tool_call_args'; readonly index: number; readonly text: string };

/** Why a call was refused or failed, in terms both dialects' errors can express. */
export type ErrorKind =
  | 'invalid_request'
  | 'auth'
  | 'permission'
  | 'budget'
  | 'rate_limited'
  | 'not_found'
  | 'conflict'
  | 'upstream'
  | 'overloaded'
  | 'internal';

export interface NeutralError {
  readonly kind: ErrorKind;
  readonly message: string;
  /** A machine-readable reason: the budget authority's deny reason, `model_not_found`, … */
  readonly code?: string;
  /** The request field at fault (400). */
  readonly field?: string;
  readonly retry_after_ms?: number;
}

/** A refused translation names the field at fault, like every other bad input. */
export type Translated<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly field: string; readonly message: string };
