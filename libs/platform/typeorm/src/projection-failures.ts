// Why a batch failed, as the runner must know it (ADR 0045): a transient failure (the
// database unreachable, a lock, a timeout, a connection reset, another runner) is retried
// with backoff and never quarantines anything; any other failure may be the event's own,
// and is tested by applying that event alone. And what the quarantine row says about it:
// the error's kind, its code and its message with every quoted part removed, because a
// driver or a projection may quote the value it refused, and values are customer content.
import { CheckpointMoved } from './checkpoint-store.js';
import { QUARANTINE_REASON_LENGTH } from './quarantine.entity.js';
import { QuarantineMoved } from './quarantine-store.js';

/** SQLite result codes of an operating condition (locks, I/O, a full disk), not of the rows written. */
const SQLITE_TRANSIENT = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|PROTOCOL|NOMEM|INTERRUPT|READONLY|NOTADB)/;
/**
 * PostgreSQL SQLSTATEs of the same kind: connection exceptions (08), insufficient resources
 * (53), operator intervention such as a statement timeout or a shutdown (57), system errors
 * (58), serialization failures and deadlocks (40001, 40P01), a lock not available (55P03).
 */
const POSTGRES_TRANSIENT = /^(08|53|57|58)[0-9A-Z]{3}$|^(40001|40P01|55P03|55006)$/;
const NODE_TRANSIENT = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
]);
/** What node-postgres, better-sqlite3 and TypeORM say, without a code, when the connection is gone. */
const CONNECTION_GONE =
  /connection terminated|connection (is )?not (open|established)|not connected|timeout exceeded when trying to connect|connection error|database connection is not open|datasource is not initialized|pool after calling end/i;

/** How deep a chain of causes is followed. */
const CAUSES_MAX = 5;

/** Whether the failure is the database's or the runner's situation, not the events': retry, never quarantine. */
export function isTransientFailure(error: unknown): boolean {
  for (const e of causes(error)) {
    if (e instanceof CheckpointMoved || e instanceof QuarantineMoved) return true;
    const code = codeOf(e);
    if (
      code !== undefined &&
      (SQLITE_TRANSIENT.test(code) || POSTGRES_TRANSIENT.test(code) || NODE_TRANSIENT.has(code))
    )
      return true;
    if (e instanceof Error && CONNECTION_GONE.test(e.message)) return true;
  }
  return false;
}

/** A short reason for the quarantine row and the logs: kind, code, message without quoted text. */
export function unprojectableReason(error: unknown): string {
  const chain = causes(error);
  const first = chain[0];
  const name = first instanceof Error ? first.name : typeof first;
  const code = chain.map(codeOf).find((c) => c !== undefined);
  const message = first instanceof Error ? scrub(first.message) : '';
  const reason = `${name}${code === undefined ? '' : ` ${code}`}${message ? `: ${message}` : ''}`;
  return reason.length <= QUARANTINE_REASON_LENGTH ? reason : `${reason.slice(0, QUARANTINE_REASON_LENGTH - 1)}…`;
}

/** The first line, with quoted parts, JSON-looking parts and long tokens replaced by an ellipsis. */
function scrub(message: string): string {
  return (message.split('\n')[0] ?? '')
    .replace(/"[^"]*"?|'[^']*'?|`[^`]*`?/g, '…')
    .replace(/[{[].*[}\]]/g, '…')
    .replace(/\S{65,}/g, '…')
    .trim();
}

function causes(error: unknown): unknown[] {
  const out: unknown[] = [];
  let e: unknown = error;
  while (e !== undefined && e !== null && out.length < CAUSES_MAX) {
    out.push(e);
    const next = (e as { driverError?: unknown }).driverError ?? (e as { cause?: unknown }).cause;
    if (next === e) break;
    e = next;
  }
  return out;
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code) ? code : undefined;
}
