// What differs between provider APIs: how a request is written and how the event stream is
// read. Everything else (HTTP, watchdog, classification, breaker) is shared by the gateway.
// Both directions go through the dialect library's neutral model, so a unit that came in
// in either dialect reaches either provider kind.
import { isObject, ReplyBuilder, type Delta, type NeutralRequest, type Part } from '@tally/orchestrator-dialects';
import { classifyHttpStatus, type ClassifiedFailure } from './failure-classification.js';
import type { DispatchRequest, Usage } from './provider-gateway.types.js';
import type { SseEvent } from './sse-parser.js';

/** The response could not be understood; classified as model/unknown. */
export class StreamProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StreamProtocolError';
  }
}

export interface StreamDecoder {
  /**
   * Consumes one SSE event. Returns a failure for an error event sent inside the stream;
   * throws StreamProtocolError when the event cannot be understood.
   */
  onEvent(event: SseEvent): ClassifiedFailure | undefined;
  readonly output: string;
  /** The reply's parts, present when it has more than text (tool calls). */
  readonly parts: Part[] | undefined;
  readonly stopReason: string | undefined;
  /** Set only when the provider reported both token counts; absent means unknown, never zero. */
  readonly usage: Usage | undefined;
  /** The message is whole: the provider signalled its end (or, for OpenAI, a finish_reason and a clean close). */
  readonly complete: boolean;
  /** The terminal event arrived (OpenAI `[DONE]`, Anthropic `message_stop`); nothing after it matters. */
  readonly terminated: boolean;
}

export interface ProviderProtocol {
  /** Appended to the configured base_url. */
  readonly path: string;
  headers(apiKey: string): Record<string, string>;
  body(req: DispatchRequest): string;
  createDecoder(outputMaxChars: number, onDelta?: (delta: Delta) => void): StreamDecoder;
  /** Extracts a short human-readable reason from an error response body. */
  errorDetail(body: string): string;
}

export type JsonObject = Record<string, unknown>;

/** The unit's request in the neutral model: its messages (parts when recorded, else text) and call options. */
export function neutralRequestOf(req: DispatchRequest): NeutralRequest {
  const options = (req.options ?? {}) as Partial<NeutralRequest>;
  return {
    model: req.model,
    messages: req.messages.map((m) => ({
      role: (m.role === 'system' || m.role === 'assistant' || m.role === 'tool'
        ? m.role
        : 'user') as NeutralRequest['messages'][number]['role'],
      parts: (m.parts as Part[] | undefined) ?? [{ type: 'text', text: m.content }],
    })),
    ...(options.tools ? { tools: options.tools } : {}),
    ...(options.tool_choice ? { tool_choice: options.tool_choice } : {}),
    sampling: options.sampling ?? {},
    stream: true,
    ...(options.passthrough ? { passthrough: options.passthrough } : {}),
  };
}

/** Accumulates a streamed reply with an explicit bound, forwarding each delta as it arrives. */
export class ReplyAccumulator {
  private readonly builder: ReplyBuilder;
  constructor(
    maxChars: number,
    private readonly onDelta?: (delta: Delta) => void,
  ) {
    this.builder = new ReplyBuilder(maxChars);
  }

  add(deltas: readonly Delta[]): void {
    for (const delta of deltas) {
      try {
        this.builder.add(delta);
      } catch (error) {
        throw new StreamProtocolError(error instanceof Error ? error.message : String(error));
      }
      this.onDelta?.(delta);
    }
  }

  get text(): string {
    return this.builder.text;
  }

  get empty(): boolean {
    return this.builder.empty;
  }

  /** Parts only when the reply has tool calls: a text reply is its text. */
  get parts(): Part[] | undefined {
    return this.builder.hasToolCalls ? this.builder.snapshot() : undefined;
  }
}

export function parseJsonObject(data: string, what: string): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw new StreamProtocolError(`unparseable ${what}: ${truncate(data, 200)}`);
  }
  if (!isObject(value)) throw new StreamProtocolError(`${what} is not a JSON object: ${truncate(data, 200)}`);
  return value;
}

export { isObject };

export function truncate(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars)}…`;
}

/** A TypeError from a dialect reader means the provider's stream did not have its shape. */
export function protocolErrorOf(error: unknown): never {
  if (error instanceof TypeError) throw new StreamProtocolError(error.message);
  throw error;
}

/**
 * Classifies an error event sent inside a 200 stream by mapping it onto the HTTP status it
 * stands for. Once output has streamed the provider may already bill for it, so the
 * settlement becomes 'unknown' whatever the table says for the bare status.
 */
export function inStreamFailure(status: number, label: string, outputSeen: boolean): ClassifiedFailure {
  const { domain, settlement } = classifyHttpStatus(status, '', {}, Date.now());
  const error = `error event in stream: ${label}`;
  return { domain, settlement: outputSeen ? 'unknown' : settlement, error };
}
