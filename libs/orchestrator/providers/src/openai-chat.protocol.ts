// OpenAI-compatible Chat Completions with SSE streaming: `data: {chunk}` lines ending with
// `data: [DONE]`; with stream_options.include_usage the last chunk carries the usage.
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

/** OpenAI error codes and types seen inside streams, mapped onto the status they stand for. */
const ERROR_STATUS: Record<string, number> = {
  rate_limit_exceeded: 429,
  insufficient_quota: 429,
  invalid_api_key: 401,
  authentication_error: 401,
  permission_error: 403,
  invalid_request_error: 400,
  not_found_error: 404,
  server_error: 500,
  overloaded_error: 503,
  service_unavailable: 503,
};

export const openAiChatProtocol: ProviderProtocol = {
  path: '/chat/completions',
  headers: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  body: (req: DispatchRequest) =>
    JSON.stringify({
      model: req.model,
      messages: req.messages,
      max_tokens: req.max_tokens,
      stream: true,
      stream_options: { include_usage: true },
    }),
  createDecoder: (outputMaxChars) => new OpenAiChatDecoder(outputMaxChars),
  errorDetail: (body) => openAiErrorDetail(body),
};

class OpenAiChatDecoder implements StreamDecoder {
  private readonly buffer: OutputBuffer;
  private usageValue: Usage | undefined;
  private done = false;
  private finished = false;

  constructor(outputMaxChars: number) {
    this.buffer = new OutputBuffer(outputMaxChars);
  }

  get output(): string {
    return this.buffer.text;
  }
  get usage(): Usage | undefined {
    return this.usageValue;
  }
  /** `[DONE]` is the terminator; a finish_reason followed by a clean close is accepted too. */
  get complete(): boolean {
    return this.done || this.finished;
  }
  get terminated(): boolean {
    return this.done;
  }

  onEvent(event: SseEvent): ClassifiedFailure | undefined {
    if (this.done) return undefined;
    if (event.data.trim() === '[DONE]') {
      this.done = true;
      return undefined;
    }
    const chunk = parseJsonObject(event.data, 'chat completion chunk');
    if (chunk['error'] !== undefined) return this.errorEvent(chunk['error']);
    this.readChoice(chunk['choices']);
    if (chunk['usage'] !== undefined && chunk['usage'] !== null) this.readUsage(chunk['usage']);
    return undefined;
  }

  private readChoice(choices: unknown): void {
    if (choices === undefined || choices === null) return;
    if (!Array.isArray(choices)) throw new StreamProtocolError('choices is not an array');
    const choice: unknown = choices.find((c: unknown) => isObject(c) && c['index'] === 0) ?? choices[0];
    if (choice === undefined) return; // The usage chunk has an empty choices array.
    if (!isObject(choice)) throw new StreamProtocolError('choice is not an object');
    const delta = choice['delta'];
    if (isObject(delta)) {
      const content = delta['content'];
      if (typeof content === 'string') this.buffer.append(content);
      else if (content !== undefined && content !== null)
        throw new StreamProtocolError('delta.content is not a string');
    }
    if (typeof choice['finish_reason'] === 'string') this.finished = true;
  }

  private readUsage(usage: unknown): void {
    if (!isObject(usage)) throw new StreamProtocolError('usage is not an object');
    this.usageValue = {
      input_tokens: tokenCount(usage['prompt_tokens'], 'prompt_tokens'),
      output_tokens: tokenCount(usage['completion_tokens'], 'completion_tokens'),
    };
  }

  private errorEvent(error: unknown): ClassifiedFailure {
    const fields: JsonObject = isObject(error) ? error : { message: String(error) };
    const key = [fields['code'], fields['type']].find((k): k is string => typeof k === 'string' && k in ERROR_STATUS);
    const status = key === undefined ? 500 : (ERROR_STATUS[key] ?? 500);
    const label = `${String(fields['code'] ?? fields['type'] ?? 'error')}: ${truncate(String(fields['message'] ?? ''), 300)}`;
    return inStreamFailure(status, label, !this.buffer.empty);
  }
}

function openAiErrorDetail(body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    if (isObject(parsed) && isObject(parsed['error']) && typeof parsed['error']['message'] === 'string') {
      return truncate(parsed['error']['message'], 300);
    }
  } catch {
    // Not JSON: fall through to the raw text, which is still useful in the attempt record.
  }
  return truncate(body.trim(), 300);
}
