// The dead-letter stream: a message that cannot be decoded or validated, or that
// exceeded its delivery limit, is copied here with its reason before the original is
// terminated. Nothing is silently dropped.
import type { JetStreamClient } from '@nats-io/jetstream';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/nats-core';
import type { FieldError, TallyNames } from '@tally/contracts';

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
}

export function deadLetterRecord(letter: DeadLetter): DeadLetterRecord {
  const headers: Record<string, string[]> = {};
  for (const [key, values] of letter.headers ?? []) headers[key] = values;
  return {
    source: letter.source,
    reason: letter.reason,
    detail: letter.detail,
    errors: letter.errors ?? [],
    original_subject: letter.originalSubject,
    original_stream: letter.originalStream ?? null,
    original_sequence: letter.originalSequence ?? null,
    deliveries: letter.deliveries ?? null,
    data_base64: Buffer.from(letter.data).toString('base64'),
    headers,
  };
}

/**
 * Publishes the dead letter durably. The message id makes a redelivered poison
 * message land once: the same stream sequence dead-letters to the same id.
 */
export async function publishDeadLetter(js: JetStreamClient, names: TallyNames, letter: DeadLetter, timeoutMs: number): Promise<void> {
  const hdrs = natsHeaders();
  hdrs.set('Tally-Dead-Letter-Reason', letter.reason);
  const msgID =
    letter.originalStream !== undefined && letter.originalSequence !== undefined
      ? `dlq:${letter.source}:${letter.originalStream}:${letter.originalSequence}`
      : undefined;
  await js.publish(names.deadLetterSubject(letter.source), JSON.stringify(deadLetterRecord(letter)), {
    headers: hdrs,
    timeout: timeoutMs,
    ...(msgID ? { msgID } : {}),
  });
}
