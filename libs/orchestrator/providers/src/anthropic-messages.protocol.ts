// Anthropic Messages with streaming: typed SSE events message_start (input tokens),
// content_block_delta (text), message_delta (final output tokens), message_stop, error.
// Unknown event types are ignored because Anthropic documents that new ones may appear.
import {
  inStreamFailure,
  isObject,
  OutputBuffer,
  parseJsonObject,
  StreamProtocolError,
  tokenCount,
  truncate,
  type JsonObject,
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
  body: (req: DispatchRequest) => JSON.stringify(anthropicBody(req)),
  createDecoder: (outputMaxChars) => new AnthropicMessagesDecoder(outputMaxChars),
  errorDetail: (body) => anthropicErrorDetail(body),
};

/** Anthropic takes system prompts as a top-level field, not as messages. */
function anthropicBody(req: DispatchRequest): JsonObject {
  const system = req.messages.filter((m) => m.role === 'system').map((m) => m.content);
  const messages = req.messages.filter((m) => m.role !== 'system').map((m) => ({ role: m.role, content: m.content }));
  const body: JsonObject = { model: req.model, max_tokens: req.max_tokens, messages, stream: true };
  if (system.length > 0) body['system'] = system.join('\n\n');
  return body;
}

class AnthropicMessagesDecoder implements StreamDecoder {
  private readonly buffer: OutputBuffer;
  private inputTokens: number | undefined;
  private outputTokens: number | undefined;
  private done = false;

  constructor(outputMaxChars: number) {
    this.buffer = new OutputBuffer(outputMaxChars);
  }

  get output(): string {
    return this.buffer.text;
  }
  get usage(): Usage | undefined {
    if (this.inputTokens === undefined || this.outputTokens === undefined) return undefined;
    return { input_tokens: this.inputTokens, output_tokens: this.outputTokens };
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
    switch (type) {
      case 'message_start':
        this.messageStart(data['message']);
        return undefined;
      case 'content_block_start':
        this.contentBlockStart(data['content_block']);
        return undefined;
      case 'content_block_delta':
        this.contentBlockDelta(data['delta']);
        return undefined;
      case 'message_delta':
        this.messageDelta(data['usage']);
        return undefined;
      case 'message_stop':
        this.done = true;
        return undefined;
      case 'error':
        return this.errorEvent(data['error']);
      default:
        return undefined; // ping, content_block_stop and future event types.
    }
  }

  private messageStart(message: unknown): void {
    if (!isObject(message)) throw new StreamProtocolError('message_start without a message object');
    const usage = message['usage'];
    if (isObject(usage) && usage['input_tokens'] !== undefined)
      this.inputTokens = tokenCount(usage['input_tokens'], 'input_tokens');
  }

  private contentBlockStart(block: unknown): void {
    if (!isObject(block)) throw new StreamProtocolError('content_block_start without a content_block object');
    if (block['type'] === 'text' && typeof block['text'] === 'string') this.buffer.append(block['text']);
  }

  private contentBlockDelta(delta: unknown): void {
    if (!isObject(delta)) throw new StreamProtocolError('content_block_delta without a delta object');
    if (delta['type'] !== 'text_delta') return; // Tool-input and thinking deltas are not output text.
    if (typeof delta['text'] !== 'string') throw new StreamProtocolError('text_delta without text');
    this.buffer.append(delta['text']);
  }

  /** message_delta carries the cumulative output count; newer API versions may restate input too. */
  private messageDelta(usage: unknown): void {
    if (usage === undefined || usage === null) return;
    if (!isObject(usage)) throw new StreamProtocolError('message_delta usage is not an object');
    if (usage['output_tokens'] !== undefined) this.outputTokens = tokenCount(usage['output_tokens'], 'output_tokens');
    if (usage['input_tokens'] !== undefined && usage['input_tokens'] !== null) {
      this.inputTokens = tokenCount(usage['input_tokens'], 'input_tokens');
    }
  }

  private errorEvent(error: unknown): ClassifiedFailure {
    const fields: JsonObject = isObject(error) ? error : {};
    const type = typeof fields['type'] === 'string' ? fields['type'] : 'api_error';
    const label = `${type}: ${truncate(String(fields['message'] ?? ''), 300)}`;
    return inStreamFailure(ERROR_STATUS[type] ?? 500, label, !this.buffer.empty);
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
