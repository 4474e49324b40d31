// The dead-letter stream: a message that cannot be decoded or validated, or that
// exceeded its delivery limit, is copied here with its reason before the original is
// terminated. Nothing is silently dropped, except bearer credentials: a capability token
// in a dead letter would outlive its message and be readable by anyone with access to
// operational data (ADR 0007), so the copy keeps only its sha256 fingerprint.
import { createHash } from 'node:crypto';
import type { JetStreamClient } from '@nats-io/jetstream';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/nats-core';
import {
  HEADER_ROOM_BYTES,
  sizeLimitsOf,
  tokenFingerprint,
  walkJson,
  type FieldError,
  type TallyNames,
} from '@tally/contracts';
import { Counter } from 'prom-client';

/**
 * Dead letters this process wrote, by source (a consumer or handler name) and reason (the
 * closed set above): both bounded, so the series stay few. Registered with no registry
 * here; each service adds it to its own at boot (one service per process).
 */
export const deadLettersWritten = new Counter({
  name: 'tally_dead_letters_total',
  help: 'Dead letters this process wrote (a duplicate of one already written is not counted), by source and reason',
  labelNames: ['source', 'reason'],
  registers: [],
});

export interface DeadLetter {
  /** Which consumer or handler gave up: becomes the last subject token. */
  readonly source: string;
  readonly reason: 'decode_failed' | 'validation_failed' | 'max_deliveries_exceeded' | 'handler_rejected';
  readonly detail: string;
  readonly errors?: readonly FieldError[];
  readonly originalSubject: string;
  readonly originalStream?: string;
  readonly originalSequence?: number;
  readonly deliveries?: number;
  /**
   * For a message from no stream (a core NATS request): what makes a repeat of it the same
   * dead letter, e.g. its command id, so a re-sent bad command lands once per duplicate window.
   */
  readonly dedupeKey?: string;
  readonly data: Uint8Array;
  readonly headers?: MsgHdrs;
}

/** The JSON body stored in the dead-letter stream. */
export interface DeadLetterRecord {
  readonly source: string;
  readonly reason: DeadLetter['reason'];
  readonly detail: string;
  readonly errors: readonly FieldError[];
  readonly original_subject: string;
  readonly original_stream: string | null;
  readonly original_sequence: number | null;
  readonly deliveries: number | null;
  readonly data_base64: string;
  readonly headers: Record<string, string[]>;
  /** JSON paths of credentials replaced by their fingerprint, or ["$"] when the body was withheld. */
  readonly redacted: readonly string[];
  /**
   * Present when the record would not fit in one dead-letter message (ADR 0016): data_base64
   * keeps the first kept_bytes of the data, whose full size and SHA-256 are given here.
   */
  readonly truncated?: { readonly data_bytes: number; readonly data_sha256: string; readonly kept_bytes: number };
}

/** Keys whose string values are bearer credentials (capability tokens) wherever they appear. */
const CREDENTIAL_KEYS = new Set(['token']);
/** Bound on the values a redaction walks; a larger body that names a credential is withheld whole. */
const REDACT_VALUES_MAX = 50_000;

/**
 * The message body as a dead letter may keep it: every credential value replaced by
 * `[redacted sha256:<fingerprint>]` (the fingerprint ADR 0007 records in place of a token,
 * so the two can be matched). A body that cannot be parsed (or is too large to walk) but
 * names a credential key is withheld, leaving its size and digest.
 */
export function redactCredentials(data: Uint8Array): { readonly data: Uint8Array; readonly redacted: string[] } {
  const text = Buffer.from(data).toString('utf8');
  if (![...CREDENTIAL_KEYS].some((key) => text.includes(`"${key}"`))) return { data, redacted: [] };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return withheld(data);
  }
  const redacted: string[] = [];
  const walked = walkJson(parsed, REDACT_VALUES_MAX, (node, path) => {
    if (Array.isArray(node)) return;
    for (const key of CREDENTIAL_KEYS) {
      const value = Object.hasOwn(node, key) ? node[key] : undefined;
      if (typeof value !== 'string') continue;
      node[key] = `[redacted sha256:${tokenFingerprint(value)}]`;
      redacted.push(`${path}.${key}`);
    }
  });
  if (walked === 'too_large') return withheld(data);
  return redacted.length === 0
    ? { data, redacted }
    : { data: Buffer.from(JSON.stringify(parsed)), redacted: redacted.sort() };
}

function withheld(data: Uint8Array): { data: Uint8Array; redacted: string[] } {
  const note = {
    withheld: 'the body could not be parsed and may hold a capability token',
    bytes: data.length,
    sha256: createHash('sha256').update(data).digest('base64url'),
  };
  return { data: Buffer.from(JSON.stringify(note)), redacted: ['$'] };
}

export function deadLetterRecord(letter: DeadLetter): DeadLetterRecord {
  const headers: Record<string, string[]> = {};
  for (const [key, values] of letter.headers ?? []) headers[key] = values;
  const body = redactCredentials(letter.data);
  return {
    source: letter.source,
    reason: letter.reason,
    detail: letter.detail,
    errors: letter.errors ?? [],
    original_subject: letter.originalSubject,
    original_stream: letter.originalStream ?? null,
    original_sequence: letter.originalSequence ?? null,
    deliveries: letter.deliveries ?? null,
    data_base64: Buffer.from(body.data).toString('base64'),
    headers,
    redacted: body.redacted,
  };
}

const DETAIL_CHARS_MAX = 4_096;
const ERRORS_KEPT_MAX = 64;
const ERROR_MESSAGE_CHARS_MAX = 1_024;
/** Used when the server does not say its max_payload. */
const DEFAULT_MESSAGE_BYTES_MAX = 1024 * 1024;

/**
 * The record as it fits in one message of `messageBytesMax` (the dead-letter stream's
 * max_msg_size, or the server's max_payload): unchanged when it fits; otherwise its detail and
 * field errors are cut and its data keeps a prefix, with the full size and digest beside it,
 * so a message is always dead-lettered and never stuck for being too large to dead-letter.
 */
export function fitDeadLetter(record: DeadLetterRecord, messageBytesMax: number): DeadLetterRecord {
  const budget = messageBytesMax - HEADER_ROOM_BYTES;
  if (Buffer.byteLength(JSON.stringify(record)) <= budget) return record;
  const data = Buffer.from(record.data_base64, 'base64');
  const keep = Math.max(0, Math.min(data.length, sizeLimitsOf(messageBytesMax).deadLetterDataBytesMax));
  const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text);
  const fitted: DeadLetterRecord = {
    ...record,
    detail: cut(record.detail, DETAIL_CHARS_MAX),
    errors: record.errors
      .slice(0, ERRORS_KEPT_MAX)
      .map((e) => ({ field: cut(e.field, ERROR_MESSAGE_CHARS_MAX), message: cut(e.message, ERROR_MESSAGE_CHARS_MAX) })),
    data_base64: data.subarray(0, keep).toString('base64'),
    truncated: {
      data_bytes: data.length,
      data_sha256: createHash('sha256').update(data).digest('base64url'),
      kept_bytes: keep,
    },
  };
  // Headers are the last thing that can still be too large.
  return Buffer.byteLength(JSON.stringify(fitted)) <= budget ? fitted : { ...fitted, headers: {} };
}

/** The largest message the server takes from this connection. */
function serverPayloadMax(js: JetStreamClient): number {
  const info = (js as unknown as { nc?: { info?: { max_payload?: number } } }).nc?.info;
  return info?.max_payload && info.max_payload > 0 ? info.max_payload : DEFAULT_MESSAGE_BYTES_MAX;
}

/**
 * Publishes the dead letter durably. The message id makes a redelivered poison
 * message land once: the same stream sequence dead-letters to the same id.
 */
export async function publishDeadLetter(
  js: JetStreamClient,
  names: TallyNames,
  letter: DeadLetter,
  timeoutMs: number,
  /** The dead-letter stream's max_msg_size (streams.max_msg_size_bytes); the server's max_payload bounds it too. */
  messageBytesMax?: number,
): Promise<void> {
  const hdrs = natsHeaders();
  hdrs.set('Tally-Dead-Letter-Reason', letter.reason);
  const msgID =
    letter.originalStream !== undefined && letter.originalSequence !== undefined
      ? `dlq:${letter.source}:${letter.originalStream}:${letter.originalSequence}`
      : letter.dedupeKey !== undefined
        ? `dlq:${letter.source}:${letter.dedupeKey}`
        : undefined;
  const bytesMax = Math.min(messageBytesMax ?? Number.MAX_SAFE_INTEGER, serverPayloadMax(js));
  const record = fitDeadLetter(deadLetterRecord(letter), bytesMax);
  const ack = await js.publish(names.deadLetterSubject(letter.source), JSON.stringify(record), {
    headers: hdrs,
    timeout: timeoutMs,
    ...(msgID ? { msgID } : {}),
  });
  if (!ack.duplicate) deadLettersWritten.inc({ source: letter.source, reason: letter.reason });
}
