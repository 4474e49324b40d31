// What a NATS user may and may not do, tried for real against a server: each attempt is named
// by what happened (allowed, refused by the user's permissions, or refused by the stream
// itself), so a test compares a whole table of outcomes at once.
import { JetStreamApiError, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { headers, PermissionViolationError, type NatsConnection } from '@nats-io/nats-core';
import { kvStreamName } from '@tally/platform-jetstream';

/**
 * 'allowed'; 'refused' for the server's permission violation; `refused by the stream: …` for a
 * JetStream error (a roll-up or purge the stream denies); anything else is named as it is.
 */
export async function outcome(attempt: Promise<unknown>): Promise<string> {
  try {
    await attempt;
    return 'allowed';
  } catch (error) {
    if (permissionViolation(error)) return 'refused';
    if (error instanceof JetStreamApiError) return `refused by the stream: ${error.message}`;
    return `failed otherwise: ${String(error)}`;
  }
}

/** A refused subscription is closed by the client with the server's permission violation. */
export async function subscribeOutcome(nc: NatsConnection, subject: string): Promise<string> {
  const sub = nc.subscribe(subject);
  await nc.flush();
  const closed = await Promise.race([sub.closed, new Promise((r) => setTimeout(() => r('open'), 2_000))]);
  sub.unsubscribe();
  if (closed === 'open') return 'allowed';
  return permissionViolation(closed) ? 'refused' : `closed otherwise: ${String(closed)}`;
}

/** The server's permission violation, as the client reports it (a request wraps it as its cause). */
function permissionViolation(error: unknown): boolean {
  for (let e = error; e instanceof Error; e = e.cause) if (e instanceof PermissionViolationError) return true;
  return false;
}

/** A bucket, a key the probing user may write there (if any) and one it may not (if any). */
export interface BucketProbe {
  readonly bucket: string;
  readonly ownKey?: string;
  readonly foreignKey?: string;
}

export const ROLLUP_REFUSED = 'refused by the stream: rollup not permitted';
export const PURGE_REFUSED = 'refused by the stream: stream purge not permitted';

/**
 * Tries, on one bucket: a `Nats-Rollup: all` publish (on a key the user may write, so only the
 * stream can refuse it; that roll-up would delete every other key), a purge of its stream, a
 * write of a key the user may not write, and the normal path, a write of its own key. The
 * roll-up never reaches a running service's key: a stream that refuses it stores nothing.
 */
export async function probeBucket(
  js: JetStreamClient,
  jsm: JetStreamManager,
  probe: BucketProbe,
  out: Record<string, string>,
): Promise<void> {
  const rollup = headers();
  rollup.set('Nats-Rollup', 'all');
  const key = probe.ownKey ?? 'probe';
  out[`rollup ${probe.bucket}`] = await outcome(js.publish(`$KV.${probe.bucket}.${key}`, 'all', { headers: rollup }));
  out[`purge ${probe.bucket}`] = await outcome(jsm.streams.purge(kvStreamName(probe.bucket)));
  if (probe.foreignKey !== undefined)
    out[`write ${probe.bucket}.${probe.foreignKey}`] = await outcome(
      js.publish(`$KV.${probe.bucket}.${probe.foreignKey}`, 'not yours'),
    );
  if (probe.ownKey !== undefined)
    out[`write ${probe.bucket}.${probe.ownKey}`] = await outcome(
      js.publish(`$KV.${probe.bucket}.${probe.ownKey}`, 'mine'),
    );
}
