export type {
  Delta,
  Dialect,
  ErrorKind,
  JsonObject,
  NeutralError,
  NeutralMessage,
  NeutralReply,
  NeutralRequest,
  NeutralUsage,
  Part,
  Role,
  Sampling,
  StopReason,
  ToolChoice,
  ToolDefinition,
  Translated,
} from './neutral.types.js';
export { isObject, parseArguments, textOf } from './fields.js';
export { openAiIncludeUsage, openAiRequestIn, openAiRequestOut, MESSAGES_MAX, TOOLS_MAX } from './openai.request.js';
export { anthropicRequestIn, anthropicRequestOut } from './anthropic.request.js';
export { OpenAiChunkReader, OpenAiStreamWriter, openAiReplyOut, openAiUsage } from './openai.reply.js';
export type { ChunkReading, ReplyMeta } from './openai.reply.js';
export { AnthropicEventReader, AnthropicStreamWriter, anthropicReplyOut, anthropicUsage } from './anthropic.reply.js';
export type { EventReading } from './anthropic.reply.js';
export { ReplyBuilder, deltasOf } from './reply-builder.js';
export { dialectError, kindOfDenyReason, kindOfStatus, reasonCode } from './errors.js';
export type { DialectErrorResponse } from './errors.js';
export {
  ANTHROPIC_STOP_OF,
  ERROR_TABLE,
  OPENAI_FINISH_OF,
  STOP_OF_ANTHROPIC,
  STOP_OF_OPENAI_FINISH,
} from './tables.js';
