// Small HTTP helpers shared by the controllers: idempotency keys, refusals as
// problem+json, and the header that says a read may be behind the stream.
import { randomUUID } from 'node:crypto';
import type { Rejection } from '@tally/budget-domain';
import { ProblemException } from '@tally/platform-app';

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,256}$/;

export interface HeaderSink {
  setHeader(name: string, value: string): unknown;
}

/** The command id of an HTTP call: the caller's Idempotency-Key, else a fresh one (a new call). */
export function commandIdFrom(key: string | undefined): string | undefined {
  if (key === undefined) return undefined;
  if (!IDEMPOTENCY_KEY.test(key))
    throw new ProblemException(400, 'validation', 'The request is invalid', [
      { field: 'Idempotency-Key', message: 'must be 1 to 256 printable ASCII characters' },
    ]);
  return `http-${key}`;
}

/** `recorded` is the command id an Idempotency-Key recorded (ADR 0023); without one, a new command. */
export function freshCommandId(key: string | undefined, recorded?: string): string {
  return recorded ?? commandIdFrom(key) ?? `http-${randomUUID()}`;
}

const NOT_FOUND = new Set(['capability_unknown', 'parent_unknown', 'hold_unknown']);

/** A named rejection of the application: 404 for an unknown id, else 422 with the code as the problem type. */
export function refused(rejection: Rejection): ProblemException {
  return new ProblemException(NOT_FOUND.has(rejection.code) ? 404 : 422, rejection.code, rejection.message);
}

export function notFound(what: string, id: string): ProblemException {
  return new ProblemException(404, 'not_found', `${what} ${id} is unknown`);
}

/** The projection did not catch up within the read wait: the answer may be behind the stream. */
export function staleHeader(res: HeaderSink, fresh: boolean): void {
  if (!fresh) res.setHeader('Tally-Projection-Stale', 'true');
}
