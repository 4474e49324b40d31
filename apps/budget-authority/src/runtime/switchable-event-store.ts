// Test-only fault injection: an EventStore whose lost-acknowledgement behaviour can be
// switched while the authority runs (POST /v1/test/faults). With nothing configured it
// is a plain pass-through to the JetStream event store.
import type { EventMessage } from '@tally/contracts';
import { LostAckEventStore, type LostAckOptions } from '@tally/budget-infrastructure';
import type { AppendResult, EventStore, LoadResult } from '@tally/eventing';

export class SwitchableEventStore implements EventStore {
  private faulty: LostAckEventStore | undefined;

  constructor(private readonly inner: EventStore) {}

  /** Loses the next `lossesMax` acknowledgements of appends that carry one of `kinds`. */
  loseAcks(options: LostAckOptions | undefined): void {
    this.faulty =
      options === undefined || options.lossesMax === 0 ? undefined : new LostAckEventStore(this.inner, options);
  }

  /** Event ids whose append committed but whose acknowledgement was thrown away. */
  lost(): readonly string[] {
    return this.faulty?.lost ?? [];
  }

  append(
    subject: string,
    events: readonly Omit<EventMessage, 'schemaVersion'>[],
    expectedSequence: number,
  ): Promise<AppendResult> {
    return (this.faulty ?? this.inner).append(subject, events, expectedSequence);
  }

  load(subject: string, afterSequence?: number): Promise<LoadResult> {
    return this.inner.load(subject, afterSequence);
  }
}
