// The wire format of durable commands and their replies, shared by server and client.
//
// Command: subject `<ns>.cmd.<service>.<command>`, body = the JSON payload, headers
//   Nats-Msg-Id = Tally-Command-Id = the command id (stream dedupe + correlation),
//   Tally-Reply-To = the caller's inbox, traceparent when the caller has one.
// Reply: published to Tally-Reply-To with Tally-Command-Id (and traceparent) headers,
//   body = CommandReply JSON. The same bytes are kept in the reply cache (KV) under
//   replyCacheKey(commandId), so a repeated command gets byte-identical answers.
import type { FieldError } from '@tally/contracts';

export type CommandError =
  /** The payload (or a required header) is malformed or invalid; `errors` names each field. */
  | { readonly type: 'validation'; readonly message: string; readonly errors: readonly FieldError[] }
  /** The handler refused the command with a typed RpcException: a definite, final answer. */
  | { readonly type: 'rejected'; readonly message: string; readonly reason: string; readonly detail?: unknown }
  /** The handler kept failing; the command was dead-lettered after `deliveries` attempts. */
  | { readonly type: 'max_deliveries_exceeded'; readonly message: string; readonly deliveries: number }
  /**
   * Core request/reply only (ADR 0025): this attempt decided nothing the caller can rely on
   * (the replica is busy or shutting down, the handler failed, the command is unknown to
   * it). Not a final answer: the caller re-sends with the same command id.
   */
  | { readonly type: 'unavailable'; readonly message: string };

export type CommandReply<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: CommandError };

const COMMAND_ID = /^[\x21-\x7e]{1,512}$/;

/** Command ids are printable ASCII without spaces, at most 512 characters: they travel in headers. */
export function commandIdProblem(commandId: string | undefined): string | undefined {
  if (commandId === undefined || commandId === '') return 'is required';
  if (!COMMAND_ID.test(commandId)) return 'must be 1-512 printable ASCII characters without spaces';
  return undefined;
}

/** KV keys allow only [-/_=.a-zA-Z0-9]; base64url maps any command id into [-_a-zA-Z0-9]. */
export function replyCacheKey(commandId: string): string {
  return Buffer.from(commandId, 'utf8').toString('base64url');
}

export function encodeReply(reply: CommandReply<unknown>): Uint8Array {
  return Buffer.from(JSON.stringify(reply));
}

export function decodeReply<T>(data: Uint8Array): CommandReply<T> {
  const parsed = JSON.parse(Buffer.from(data).toString('utf8')) as CommandReply<T>;
  if (parsed === null || typeof parsed !== 'object' || typeof parsed.ok !== 'boolean') {
    throw new Error('command reply is not a {ok, value|error} object');
  }
  return parsed;
}

export function validationError(errors: readonly FieldError[]): CommandError {
  return { type: 'validation', message: 'command payload is invalid', errors };
}
