// OpenAI-compatible Chat Completions with SSE streaming: `data: {chunk}` lines ending with
// `data: [DONE]`; with stream_options.include_usage the last chunk carries the usage. The
// request body and the chunk reading are the dialect library's (ADR 0035).
import { OpenAiChunkReader, openAiRequestOut, type Delta, type StopReason } from '@tally/orchestrator-dialects';
import {
  inStreamFailure,
  isObject,
  neutralRequestOf,
  parseJsonObject,
  protocolErrorOf,
  ReplyAccumulator,
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
  body: (req: DispatchRequest) => JSON.stringify(openAiRequestOut(neutralRequestOf(req), req.model, req.max_tokens)),
  createDecoder: (outputMaxChars, onDelta) => new OpenAiChatDecoder(outputMaxChars, onDelta),
  errorDetail: (body) => openAiErrorDetail(body),
};

class OpenAiChatDecoder implements StreamDecoder {
  private readonly reply: ReplyAccumulator;
  private readonly reader = new OpenAiChunkReader();
  private usageValue: Usage | undefined;
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
    return this.usageValue;
  }
  /** `[DONE]` is the terminator; a finish_reason followed by a clean close is accepted too. */
  get complete(): boolean {
    return this.done || this.finish !== undefined;
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
    let reading;
    try {
      reading = this.reader.read(chunk);
    } catch (error) {
      protocolErrorOf(error);
    }
    this.reply.add(reading.deltas);
    if (reading.finish) this.finish = reading.finish;
    if (reading.usage) this.usageValue = reading.usage;
    return undefined;
  }

  private errorEvent(error: unknown): ClassifiedFailure {
    const fields: JsonObject = isObject(error) ? error : { message: String(error) };
    const key = [fields['code'], fields['type']].find((k): k is string => typeof k === 'string' && k in ERROR_STATUS);
    const status = key === undefined ? 500 : (ERROR_STATUS[key] ?? 500);
    const label = `${String(fields['code'] ?? fields['type'] ?? 'error')}: ${truncate(String(fields['message'] ?? ''), 300)}`;
    return inStreamFailure(status, label, !this.reply.empty);
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
