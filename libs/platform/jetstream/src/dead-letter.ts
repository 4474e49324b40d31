// The dead-letter stream: a message that cannot be decoded or validated, or that
// exceeded its delivery limit, is copied here with its reason before the original is
// terminated. Nothing is silently dropped, except bearer credentials: a capability token
// in a dead letter would outlive its message and be readable by anyone with access to
// operational data (ADR 0007), so the copy keeps only its sha256 fingerprint.
import { createHash } from 'node:crypto';
import type { JetStreamClient } from '@nats-io/jetstream';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/nats-core';
import { tokenFingerprint, walkJson, type FieldError, type TallyNames } from '@tally/contracts';
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

/**
 * Publishes the dead letter durably. The message id makes a redelivered poison
 * message land once: the same stream sequence dead-letters to the same id.
 */
export async function publishDeadLetter(
  js: JetStreamClient,
  names: TallyNames,
  letter: DeadLetter,
  timeoutMs: number,
): Promise<void> {
  const hdrs = natsHeaders();
  hdrs.set('Tally-Dead-Letter-Reason', letter.reason);
  const msgID =
    letter.originalStream !== undefined && letter.originalSequence !== undefined
      ? `dlq:${letter.source}:${letter.originalStream}:${letter.originalSequence}`
      : letter.dedupeKey !== undefined
        ? `dlq:${letter.source}:${letter.dedupeKey}`
        : undefined;
  const ack = await js.publish(names.deadLetterSubject(letter.source), JSON.stringify(deadLetterRecord(letter)), {
    headers: hdrs,
    timeout: timeoutMs,
    ...(msgID ? { msgID } : {}),
  });
  if (!ack.duplicate) deadLettersWritten.inc({ source: letter.source, reason: letter.reason });
}
