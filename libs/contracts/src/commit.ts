// The commit: the wire shape of one append. All events of an append travel in ONE stream
// message, so the server stores all of them or none, in one round trip, and they share
// that message's stream sequence (their commit index).
//
// A commit of one event is written as the plain envelope, byte for byte what a
// single-event append always wrote, and a plain envelope reads back as a commit of one:
// messages written before commits existed decode unchanged. A commit of several events is
// `{"commit_version":1,"events":[envelope, …]}`; an envelope never has those keys.

/** The current (and only) version of the multi-event commit shape. */
export const COMMIT_VERSION = 1;

/**
 * The most events a reader accepts in one commit, whatever the writer's limit: it bounds
 * the work of decoding one message. Writers choose their own, smaller limit.
 */
export const COMMIT_EVENTS_DECODE_MAX = 4096;

export interface CommitLimits {
  /** Most events in one commit; the caller must split bigger decisions itself, atomicity being its call. */
  readonly eventsMax: number;
  /** Most bytes of the encoded commit: the stream's max message size less room for headers. */
  readonly bytesMax: number;
}

/** A commit that breaks its limits: a bug or a missing bound in the caller, never retried. */
export class CommitTooLarge extends Error {
  override readonly name = 'CommitTooLarge';
  constructor(
    readonly events: number,
    readonly bytes: number | undefined,
    readonly limits: CommitLimits,
  ) {
    super(
      bytes === undefined
        ? `commit of ${events} events exceeds eventsMax=${limits.eventsMax}`
        : `commit of ${events} events is ${bytes} bytes, above bytesMax=${limits.bytesMax}`,
    );
  }
}

export interface CommitWire {
  readonly commit_version: number;
  readonly events: readonly unknown[];
}

const COMMIT_KEYS = new Set(['commit_version', 'events']);

/** Whether a parsed message is the multi-event shape (anything else is read as one envelope). */
export function isCommitWire(plain: unknown): plain is CommitWire {
  return (
    plain !== null &&
    typeof plain === 'object' &&
    !Array.isArray(plain) &&
    'events' in plain &&
    'commit_version' in plain
  );
}

/** The shape checks of a multi-event commit; undefined when it is well formed. */
export function commitShapeError(plain: CommitWire): { field: string; message: string } | undefined {
  for (const key of Object.keys(plain))
    if (!COMMIT_KEYS.has(key)) return { field: key, message: `property ${key} should not exist` };
  if (plain.commit_version !== COMMIT_VERSION)
    return {
      field: 'commit_version',
      message: `commit version ${String(plain.commit_version)} is not supported (${COMMIT_VERSION})`,
    };
  if (!Array.isArray(plain.events)) return { field: 'events', message: 'events must be an array' };
  // One event is always written as a plain envelope, so a shorter array is not ours.
  if (plain.events.length < 2) return { field: 'events', message: 'a commit carries at least 2 events' };
  if (plain.events.length > COMMIT_EVENTS_DECODE_MAX)
    return { field: 'events', message: `a commit carries at most ${COMMIT_EVENTS_DECODE_MAX} events` };
  return undefined;
}

/** Event ids are each event's identity: two in one commit would make one of them unaddressable. */
export function assertDistinctEventIds(eventIds: readonly string[]): void {
  const seen = new Set<string>();
  for (const id of eventIds) {
    if (seen.has(id)) throw new Error(`commit carries event id ${id} twice`);
    seen.add(id);
  }
}

export function assertCommitLimits(events: number, limits: CommitLimits): void {
  if (!(Number.isInteger(limits.eventsMax) && limits.eventsMax >= 1 && limits.eventsMax <= COMMIT_EVENTS_DECODE_MAX)) {
    throw new Error(`eventsMax must be 1..${COMMIT_EVENTS_DECODE_MAX}, got ${limits.eventsMax}`);
  }
  if (events < 1) throw new Error('a commit carries at least one event');
  if (events > limits.eventsMax) throw new CommitTooLarge(events, undefined, limits);
}
