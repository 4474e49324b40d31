// The dead-letter stream: a message that cannot be decoded or validated, or that
// exceeded its delivery limit, is copied here with its reason before the original is
// terminated. Nothing is silently dropped, except credentials: a capability token, an
// operator or admin key or a JWT in a dead letter would outlive its message and be readable
// by anyone with access to operational data (ADR 0007), so the copy keeps only a sha256
// fingerprint of each, in the body, the headers, the detail and the field errors. Input that
// no verified credential vouches for keeps only its size and digest (ADR 0050): a stranger's
// refused body must not cost the stream more than a few hundred bytes.
import type { JetStreamClient } from '@nats-io/jetstream';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/nats-core';
import {
  HEADER_ROOM_BYTES,
  sizeLimitsOf,
  isSecretKey,
  REDACTED,
  redactText,
  tokenFingerprint,
  walkJson,
  type FieldError,
  type TallyNames,
} from '@tally/contracts';
import { Counter } from 'prom-client';
import { cut, digestRecord, sha256Of } from './dead-letter-digest.js';
import { injectTrace } from './trace-context.js';

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
  /**
   * What the record keeps of the data: 'redacted' (the default) the data with every credential
   * replaced by its fingerprint; 'digest' only its size and SHA-256, for input nobody has
   * vouched for (an HTTP request without a verified credential, ADR 0050), whose bytes would
   * otherwise let any stranger fill the stream.
   */
  readonly keep?: 'redacted' | 'digest';
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
   * keeps the first kept_bytes of the data, whose full size and SHA-256 are given here. Also
   * present, with kept_bytes 0, when the data was withheld (`withheld`, ADR 0050).
   */
  readonly truncated?: { readonly data_bytes: number; readonly data_sha256: string; readonly kept_bytes: number };
  /** Present when the data was not kept at all (kept_bytes 0 above): why (ADR 0050). */
  readonly withheld?: 'unauthenticated';
}

/** Bound on the values a redaction walks; a larger body that holds a credential is withheld whole. */
const REDACT_VALUES_MAX = 50_000;
/** The keys of a JSON text, cheaply, to see whether any names a secret before parsing it. */
const JSON_KEY = /"((?:[^"\\]|\\.){1,128})"\s*:/g;

/** Whether a body may hold a credential: a secret-named key, or a value shaped like one. */
function mayHoldSecret(text: string): boolean {
  for (const match of text.matchAll(JSON_KEY)) if (isSecretKey(match[1]!)) return true;
  return redactText(text) !== text;
}

/**
 * The message body as a dead letter may keep it. The value of every secret-named key
 * (token, parent_token, authorization, admission_proof, password, …) becomes
 * `[redacted sha256:<fingerprint>]` (for a token, the fingerprint ADR 0007 records in its
 * place, so the two can be matched); any other string shaped like a credential (an
 * operator or admin key, a capability token, a JWT, a Bearer value, URL userinfo) is
 * scrubbed in place. A body that cannot be parsed (or is too large to walk) but may hold a
 * credential is withheld, leaving its size and digest.
 */
export function redactCredentials(data: Uint8Array): { readonly data: Uint8Array; readonly redacted: string[] } {
  const text = Buffer.from(data).toString('utf8');
  if (!mayHoldSecret(text)) return { data, redacted: [] };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return withheld(data);
  }
  const redacted: string[] = [];
  const walked = walkJson(parsed, REDACT_VALUES_MAX, (node, path) => {
    const array = Array.isArray(node);
    for (const [key, value] of Object.entries(node)) {
      const at = array ? `${path}[${key}]` : `${path}.${key}`;
      if (!array && isSecretKey(key) && value !== null && (typeof value === 'string' || typeof value === 'object')) {
        const secret = typeof value === 'string' ? value : JSON.stringify(value);
        (node as Record<string, unknown>)[key] = `[redacted sha256:${tokenFingerprint(secret)}]`;
        redacted.push(at);
      } else if (typeof value === 'string' && redactText(value) !== value) {
        (node as Record<string, unknown>)[key] = redactText(value);
        redacted.push(at);
      }
    }
  });
  if (walked === 'too_large') return withheld(data);
  // A root that is itself a credential-shaped string.
  if (typeof parsed === 'string' && redactText(parsed) !== parsed) return withheld(data);
  return redacted.length === 0
    ? { data, redacted }
    : { data: Buffer.from(JSON.stringify(parsed)), redacted: redacted.sort() };
}

function withheld(data: Uint8Array): { data: Uint8Array; redacted: string[] } {
  const note = {
    withheld: 'the body could not be parsed and may hold a credential',
    bytes: data.length,
    sha256: sha256Of(data),
  };
  return { data: Buffer.from(JSON.stringify(note)), redacted: ['$'] };
}

/** Headers as a dead letter keeps them: secret-named ones (Authorization, x-api-key, …) redacted, others scrubbed. */
function redactHeaders(headers: MsgHdrs | undefined): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [key, values] of headers ?? [])
    out[key] = values.map((v) => (isSecretKey(key) ? REDACTED : redactText(v)));
  return out;
}

export function deadLetterRecord(letter: DeadLetter): DeadLetterRecord {
  if (letter.keep === 'digest') return digestRecord(letter);
  const body = redactCredentials(letter.data);
  return {
    source: letter.source,
    reason: letter.reason,
    // The reason and field errors may quote what was sent; they are scrubbed like the body.
    detail: redactText(letter.detail),
    errors: (letter.errors ?? []).map((e) => ({ ...e, message: redactText(e.message) })),
    original_subject: letter.originalSubject,
    original_stream: letter.originalStream ?? null,
    original_sequence: letter.originalSequence ?? null,
    deliveries: letter.deliveries ?? null,
    data_base64: Buffer.from(body.data).toString('base64'),
    headers: redactHeaders(letter.headers),
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
  const fitted: DeadLetterRecord = {
    ...record,
    detail: cut(record.detail, DETAIL_CHARS_MAX),
    errors: record.errors
      .slice(0, ERRORS_KEPT_MAX)
      .map((e) => ({ field: cut(e.field, ERROR_MESSAGE_CHARS_MAX), message: cut(e.message, ERROR_MESSAGE_CHARS_MAX) })),
    data_base64: data.subarray(0, keep).toString('base64'),
    truncated: {
      data_bytes: data.length,
      data_sha256: sha256Of(data),
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
  injectTrace(hdrs);
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
