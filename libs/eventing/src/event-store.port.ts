// The event store port. Application code appends and loads through this interface;
// the JetStream adapter implements it, and fault-injecting decorators wrap it in tests.
import type { EventMessage } from '@tally/contracts';

/**
 * An event as it sits in the stream. One append is one commit (one stream message), so
 * every event of an append has the same sequence: the stream sequence is its commit index.
 */
export interface StoredEvent<P = Record<string, unknown>> {
  readonly sequence: number;
  readonly subject: string;
  readonly event: EventMessage<P>;
  /** The event's place in its commit, from 0; (sequence, position) orders every event. Absent means 0. */
  readonly position?: number;
  /** The W3C trace context the commit was appended under, when tracing was on (the projection continues it). */
  readonly traceparent?: string;
}

export interface AppendResult {
  /** Stream sequence of each appended event, in order: one commit, so all equal. */
  readonly sequences: readonly number[];
  /** The subject's last sequence after the append: the next expected sequence. */
  readonly lastSequence: number;
  /** Per event, whether the server already held the commit (all equal: a commit lands whole or not at all). */
  readonly duplicates: readonly boolean[];
}

export interface LoadResult<P = Record<string, unknown>> {
  readonly events: readonly StoredEvent<P>[];
  /** The subject's last sequence when the load began (0 for an empty aggregate). */
  readonly lastSequence: number;
}

export interface EventStore {
  /**
   * Appends events to one aggregate subject as ONE commit: all of them or none, at one
   * stream sequence, conditioned on the subject's last sequence being `expectedSequence`
   * (0 means "no events yet"). The first event's id is the commit's dedupe key.
   * Throws ConcurrencyConflict when another writer got there first.
   */
  append(
    subject: string,
    events: readonly Omit<EventMessage, 'schemaVersion'>[],
    expectedSequence: number,
  ): Promise<AppendResult>;
  /** Loads the subject's events with sequence greater than `afterSequence`, in order. */
  load(subject: string, afterSequence?: number): Promise<LoadResult>;
}

/** An expected outcome, not a bug: another writer appended to the aggregate first. */
export class ConcurrencyConflict extends Error {
  override readonly name = 'ConcurrencyConflict';
  constructor(
    readonly subject: string,
    readonly expectedSequence: number,
  ) {
    super(`concurrency conflict on ${subject}: expected last sequence ${expectedSequence}`);
  }
}

/** The append may or may not have reached the stream; only a later read can tell. */
export class AppendOutcomeUnknown extends Error {
  override readonly name = 'AppendOutcomeUnknown';
  constructor(
    readonly subject: string,
    readonly eventIds: readonly string[],
    cause: unknown,
  ) {
    super(`append to ${subject} was not acknowledged`, { cause });
  }
}

/**
 * A definite refusal: the stream is at its byte (or message) limit and refuses new
 * messages (discard: new), so nothing was stored. Never a silent drop of older events.
 */
export class StreamFull extends Error {
  override readonly name = 'StreamFull';
  constructor(
    readonly stream: string,
    readonly subject: string,
    readonly detail: string,
  ) {
    super(
      `stream ${stream} is full (${detail}): the append to ${subject} was refused and nothing was stored; ` +
        `raise the stream's byte limit (streams.max_bytes) or move the ledger to a bigger server`,
    );
  }
}

/**
 * The stored history of an aggregate (or a stream) does not start where it must, or skips
 * a commit: events are missing from the ledger. Deciding or projecting on it would be wrong.
 */
export class HistoryGap extends Error {
  override readonly name = 'HistoryGap';
  constructor(
    readonly stream: string,
    readonly subject: string,
    readonly detail: string,
  ) {
    super(`history of ${subject} in ${stream} is incomplete: ${detail}; restore the stream from a backup`);
  }
}
