// A dead letter kept as a digest (ADR 0050): for input nobody has vouched for, the record
// keeps the data's size and SHA-256, where it came from and why it was refused, and a few
// field errors cut short, never the data or its headers, so it stays under a kibibyte.
import { createHash } from 'node:crypto';
import { redactText } from '@tally/contracts';
import type { DeadLetter, DeadLetterRecord } from './dead-letter.js';

/** A digest record's bounds (ADR 0050): whatever was sent, it stays under a kibibyte, most often a few hundred bytes. */
const DIGEST_LIMITS = { recordBytesMax: 1_024, fieldCharsMax: 48, messageCharsMax: 96 } as const;
/** Field errors kept and characters of detail and subject, tried in turn until the record fits. */
const DIGEST_SHAPES: readonly (readonly [errorsKept: number, textChars: number])[] = [
  [3, 96],
  [2, 96],
  [1, 96],
  [0, 96],
  [0, 24],
];

export function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/**
 * The record of input kept as a digest: its size, its SHA-256 (base64url, as `truncated`
 * gives it, so an operator can match it to a body they hold), where it came from and why it
 * was refused, with a few field errors cut short, and none of its bytes or headers.
 */
export function digestRecord(letter: DeadLetter): DeadLetterRecord {
  const digest = { data_bytes: letter.data.length, data_sha256: sha256Of(letter.data), kept_bytes: 0 };
  let record: DeadLetterRecord | undefined;
  for (const [errorsKept, textChars] of DIGEST_SHAPES) {
    record = digestShaped(letter, digest, errorsKept, textChars);
    if (Buffer.byteLength(JSON.stringify(record)) <= DIGEST_LIMITS.recordBytesMax) break;
  }
  return record!;
}

function digestShaped(
  letter: DeadLetter,
  digest: NonNullable<DeadLetterRecord['truncated']>,
  errorsKept: number,
  textChars: number,
): DeadLetterRecord {
  const errors = (letter.errors ?? []).slice(0, errorsKept).map((e) => ({
    field: cut(redactText(e.field), DIGEST_LIMITS.fieldCharsMax),
    message: cut(redactText(e.message), DIGEST_LIMITS.messageCharsMax),
  }));
  const more = (letter.errors?.length ?? 0) - errors.length;
  if (more > 0) errors.push({ field: '$', message: `and ${more} more field error${more === 1 ? '' : 's'}` });
  return {
    source: letter.source,
    reason: letter.reason,
    detail: cut(redactText(letter.detail), textChars),
    errors,
    original_subject: cut(redactText(letter.originalSubject), textChars),
    original_stream: letter.originalStream ?? null,
    original_sequence: letter.originalSequence ?? null,
    deliveries: letter.deliveries ?? null,
    data_base64: '',
    headers: {},
    redacted: ['$'],
    truncated: digest,
    withheld: 'unauthenticated',
  };
}

export function sha256Of(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('base64url');
}
