// Anthropic Messages with streaming: typed SSE events message_start (input tokens),
// content_block_* (text and tool_use blocks), message_delta (stop reason, final output
// tokens), message_stop, error. Unknown event types are ignored because Anthropic documents
// that new ones may appear. The body and the event reading are the dialect library's (ADR 0035).
import { AnthropicEventReader, anthropicRequestOut, type Delta, type StopReason } from '@tally/orchestrator-dialects';
import {
  inStreamFailure,
  isObject,
  neutralRequestOf,
  parseJsonObject,
  protocolErrorOf,
  ReplyAccumulator,
  truncate,
  type ProviderProtocol,
  type StreamDecoder,
} from './provider-protocol.js';
import type { ClassifiedFailure } from './failure-classification.js';
import type { DispatchRequest, Usage } from './provider-gateway.types.js';
import type { SseEvent } from './sse-parser.js';

/** The API version this client speaks; sent on every request as `anthropic-version`. */
export const ANTHROPIC_VERSION = '2023-06-01';

/** Anthropic's documented error types and the HTTP status each stands for. */
const ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529,
};

export const anthropicMessagesProtocol: ProviderProtocol = {
  path: '/messages',
  headers: (apiKey) => ({ 'x-api-key': apiKey, 'anthropic-version': ANTHROPIC_VERSION }),
  body: (req: DispatchRequest) => JSON.stringify(anthropicRequestOut(neutralRequestOf(req), req.model, req.max_tokens)),
  createDecoder: (outputMaxChars, onDelta) => new AnthropicMessagesDecoder(outputMaxChars, onDelta),
  errorDetail: (body) => anthropicErrorDetail(body),
};

class AnthropicMessagesDecoder implements StreamDecoder {
  private readonly reply: ReplyAccumulator;
  private readonly reader = new AnthropicEventReader();
  private finish: StopReason | undefined;
  private done = false;

  constructor(outputMaxChars: number, onDelta?: (delta: Delta) => void) {
    this.reply = new ReplyAccumulator(outputMaxChars, onDelta);
  }

  get output(): string {
    return this.reply.text;
  }
  get parts() {
    return this.reply.parts;
  }
  get stopReason(): string | undefined {
    return this.finish;
  }
  get usage(): Usage | undefined {
    return this.reader.usage;
  }
  get complete(): boolean {
    return this.done;
  }
  get terminated(): boolean {
    return this.done;
  }

  onEvent(event: SseEvent): ClassifiedFailure | undefined {
    if (this.done) return undefined;
    const data = parseJsonObject(event.data, `${event.event} event`);
    const type = typeof data['type'] === 'string' ? data['type'] : event.event;
    let reading;
    try {
      reading = this.reader.read(type, data);
    } catch (error) {
      protocolErrorOf(error);
    }
    if (reading.error) {
      const label = `${reading.error.type}: ${truncate(reading.error.message, 300)}`;
      return inStreamFailure(ERROR_STATUS[reading.error.type] ?? 500, label, !this.reply.empty);
    }
    this.reply.add(reading.deltas);
    if (reading.finish) this.finish = reading.finish;
    if (reading.done) this.done = true;
    return undefined;
  }
}

function anthropicErrorDetail(body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    if (isObject(parsed) && isObject(parsed['error'])) {
      const { type, message } = parsed['error'];
      return truncate(`${String(type ?? 'error')}: ${String(message ?? '')}`, 300);
    }
  } catch {
    // Not JSON: the raw text is still useful in the attempt record.
  }
  return truncate(body.trim(), 300);
}
