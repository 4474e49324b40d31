// What differs between provider APIs: how a request is written and how the event stream is
// read. Everything else (HTTP, watchdog, classification, breaker) is shared by the gateway.
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
  createDecoder(outputMaxChars: number): StreamDecoder;
  /** Extracts a short human-readable reason from an error response body. */
  errorDetail(body: string): string;
}

export type JsonObject = Record<string, unknown>;

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

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function tokenCount(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new StreamProtocolError(`usage.${field} is not a non-negative integer: ${JSON.stringify(value)}`);
  }
  return value;
}

export function truncate(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars)}…`;
}

/** Accumulates streamed text with an explicit bound, because a runaway stream must not exhaust memory. */
export class OutputBuffer {
  private parts: string[] = [];
  private chars = 0;
  constructor(private readonly maxChars: number) {}

  append(text: string): void {
    if (text === '') return;
    this.chars += text.length;
    if (this.chars > this.maxChars) throw new StreamProtocolError(`output exceeded ${this.maxChars} characters`);
    this.parts.push(text);
  }

  get text(): string {
    if (this.parts.length > 1) this.parts = [this.parts.join('')];
    return this.parts[0] ?? '';
  }

  get empty(): boolean {
    return this.chars === 0;
  }
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
