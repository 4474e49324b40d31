// One dialect's way of answering: a whole reply, an SSE stream, an error. The formats are the
// dialect library's (ADR 0035); this only picks them.
import {
  AnthropicStreamWriter,
  anthropicReplyOut,
  dialectError,
  OpenAiStreamWriter,
  openAiReplyOut,
  type Delta,
  type Dialect,
  type DialectErrorResponse,
  type JsonObject,
  type NeutralError,
  type NeutralReply,
  type NeutralUsage,
  type StopReason,
} from '@tally/orchestrator-dialects';

export interface StreamWriter {
  start(): string;
  delta(d: Delta): string;
  end(stop: StopReason, usage: NeutralUsage | undefined): string;
  error(body: JsonObject): string;
}

export interface DialectWriter {
  readonly dialect: Dialect;
  reply(reply: NeutralReply, workId: string, model: string): JsonObject;
  stream(workId: string, model: string): StreamWriter;
  error(error: NeutralError): DialectErrorResponse;
}

const meta = (prefix: string, workId: string, model: string) => ({
  id: `${prefix}${workId}`,
  model,
  created: Math.floor(Date.now() / 1000),
});

export function openAiWriter(includeUsage: boolean): DialectWriter {
  return {
    dialect: 'openai',
    reply: (reply, workId, model) => openAiReplyOut(reply, meta('chatcmpl-', workId, model)),
    stream: (workId, model) => new OpenAiStreamWriter(meta('chatcmpl-', workId, model), includeUsage),
    error: (error) => dialectError('openai', error),
  };
}

export const anthropicWriter: DialectWriter = {
  dialect: 'anthropic',
  reply: (reply, workId, model) => anthropicReplyOut(reply, meta('msg_', workId, model)),
  stream: (workId, model) => new AnthropicStreamWriter(meta('msg_', workId, model)),
  error: (error) => dialectError('anthropic', error),
};
