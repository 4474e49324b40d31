// Fault injection for B10-B16: an EventStore decorator that lets an append reach the
// stream and then throws, as if the acknowledgement had been lost on the way back.
// It selects appends by the budget event they carry: a capture, a cancellation, a reverse.
import type { EventMessage } from '@tally/contracts';
import { AppendOutcomeUnknown, type AppendResult, type EventStore, type LoadResult } from '@tally/eventing';

export type LostAckKind = 'capture' | 'cancellation' | 'reverse';

/** The budget event types behind each kind, as they appear on the wire. */
const TYPES: Readonly<Record<LostAckKind, string>> = {
  capture: 'InvocationCaptured',
  cancellation: 'CaptureCancelled',
  reverse: 'HoldReversed',
};

export interface LostAckOptions {
  readonly kinds: readonly LostAckKind[];
  /** How many acknowledgements to lose before appends go through normally again. */
  readonly lossesMax: number;
}

export class LostAckEventStore implements EventStore {
  /** Event ids whose append committed but whose acknowledgement was thrown away. */
  readonly lost: string[] = [];
  private losses = 0;

  constructor(
    private readonly inner: EventStore,
    private readonly options: LostAckOptions,
  ) {}

  async append(
    subject: string,
    events: readonly Omit<EventMessage, 'schemaVersion'>[],
    expectedSequence: number,
  ): Promise<AppendResult> {
    const result = await this.inner.append(subject, events, expectedSequence);
    const types = new Set(this.options.kinds.map((kind) => TYPES[kind]));
    if (this.losses < this.options.lossesMax && events.some((event) => types.has(event.type))) {
      this.losses++;
      this.lost.push(...events.map((event) => event.eventId));
      throw new AppendOutcomeUnknown(
        subject,
        events.map((event) => event.eventId),
        new Error('acknowledgement lost'),
      );
    }
    return result;
  }

  load(subject: string, afterSequence?: number): Promise<LoadResult> {
    return this.inner.load(subject, afterSequence);
  }
}
