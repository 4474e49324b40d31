// The event store port. Application code appends and loads through this interface;
// the JetStream adapter implements it, and fault-injecting decorators wrap it in tests.
import type { EventMessage } from '@tally/contracts';

/** An event as it sits in the stream: the stream sequence is its commit index. */
export interface StoredEvent<P = Record<string, unknown>> {
  readonly sequence: number;
  readonly subject: string;
  readonly event: EventMessage<P>;
}

export interface AppendResult {
  /** Stream sequence of each appended event, in order. */
  readonly sequences: readonly number[];
  /** The subject's last sequence after the append: the next expected sequence. */
  readonly lastSequence: number;
  /** True for events the server had already stored under the same event id. */
  readonly duplicates: readonly boolean[];
}

export interface LoadResult<P = Record<string, unknown>> {
  readonly events: readonly StoredEvent<P>[];
  /** The subject's last sequence when the load began (0 for an empty aggregate). */
  readonly lastSequence: number;
}

export interface EventStore {
  /**
   * Appends events to one aggregate subject. The first event is conditioned on the
   * subject's last sequence being `expectedSequence` (0 means "no events yet"); later
   * events chain on the sequence of the one before. Each event id is its dedupe key.
   * Throws ConcurrencyConflict when another writer got there first.
   */
  append(subject: string, events: readonly Omit<EventMessage, 'schemaVersion'>[], expectedSequence: number): Promise<AppendResult>;
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
