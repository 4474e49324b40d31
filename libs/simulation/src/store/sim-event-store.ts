// The simulated event store: the EventStore port over a SimStream, mirroring the JetStream
// adapter (libs/platform/jetstream/src/event-store.ts) decision for decision. A commit is
// encoded and validated by the same registry and limits before it is sent; a duplicate of
// a multi-event commit is read back and is ours only if its event ids are; the server's
// refusals become ConcurrencyConflict and StreamFull. The synchronous core (appendNow,
// loadNow) is what the scheduled replicas call when their request reaches the "server".
import { Headers, type EventMessage, type EventRegistry } from '@tally/contracts';
import {
  ConcurrencyConflict,
  StreamFull,
  type AppendResult,
  type EventStore,
  type LoadResult,
  type StoredEvent,
} from '@tally/eventing';
import type { SimStream } from './sim-stream.js';

/** As the JetStream adapter: the most events of one commit, and the header room kept out of max_msg_size. */
export const SIM_COMMIT_EVENTS_MAX = 1024;
export const SIM_HEADER_ROOM_BYTES = 2048;

export interface SimEventStoreOptions {
  readonly registry: EventRegistry;
  /** Largest number of events one load may return, as loadEventsMax of the JetStream adapter. */
  readonly loadEventsMax: number;
  readonly commitEventsMax?: number;
}

export type Messages = readonly Omit<EventMessage, 'schemaVersion'>[];

export class SimEventStore implements EventStore {
  constructor(
    readonly stream: SimStream,
    private readonly options: SimEventStoreOptions,
  ) {}

  /** Encodes the commit as the adapter does before anything is sent: a bad or oversized commit never leaves. */
  encode(events: Messages): Uint8Array {
    return this.options.registry.encodeCommit(events, {
      eventsMax: this.options.commitEventsMax ?? SIM_COMMIT_EVENTS_MAX,
      bytesMax: this.stream.config.maxMsgSizeBytes - SIM_HEADER_ROOM_BYTES,
    });
  }

  /** The publish as it reaches the server, and its acknowledgement as the adapter reads it. */
  appendNow(subject: string, events: Messages, expected: number, data: Uint8Array): AppendResult {
    const ack = this.stream.publish(subject, data, headerBytesOf(events, expected), events[0]!.eventId, expected);
    if (ack.kind === 'wrong_last_sequence') throw new ConcurrencyConflict(subject, expected);
    if (ack.kind === 'maximum_bytes_exceeded')
      throw new StreamFull(this.stream.config.name, subject, 'maximum bytes exceeded');
    const duplicate = ack.kind === 'duplicate';
    if (duplicate && events.length > 1) {
      const stored = this.stream.message(ack.seq)?.events ?? [];
      const same = stored.length === events.length && stored.every((e, i) => e.event.eventId === events[i]!.eventId);
      if (!same) throw new ConcurrencyConflict(subject, expected);
    }
    return {
      sequences: events.map(() => ack.seq),
      duplicates: events.map(() => duplicate),
      lastSequence: ack.seq,
    };
  }

  /** A load as the server answers it now, or as a lagging replica would (`upTo`, a stream sequence). */
  loadNow(subject: string, afterSequence = 0, upTo?: number): LoadResult {
    const last = upTo === undefined ? this.stream.subjectLast(subject) : this.lastUpTo(subject, upTo);
    if (last <= afterSequence) return { events: [], lastSequence: Math.max(last, afterSequence) };
    const messages = this.stream.subjectMessages(subject, afterSequence, upTo);
    const events: StoredEvent[] = [];
    for (const message of messages) for (const event of message.events) events.push(event);
    if (events.length > this.options.loadEventsMax)
      throw new Error(`aggregate ${subject} exceeds loadEventsMax=${this.options.loadEventsMax}`);
    return { events, lastSequence: last };
  }

  async append(subject: string, events: Messages, expectedSequence: number): Promise<AppendResult> {
    return this.appendNow(subject, events, expectedSequence, this.encode(events));
  }

  async load(subject: string, afterSequence = 0): Promise<LoadResult> {
    return this.loadNow(subject, afterSequence);
  }

  private lastUpTo(subject: string, upTo: number): number {
    const messages = this.stream.subjectMessages(subject, 0, upTo);
    return messages.length === 0 ? 0 : messages[messages.length - 1]!.seq;
  }
}

/**
 * The headers the JetStream adapter sends with a commit, as NATS frames them: they count
 * against the stream's bytes like the payload does.
 */
function headerBytesOf(events: Messages, expected: number): number {
  const pairs: [string, string][] = [
    [Headers.eventType, events[0]!.type],
    [Headers.previousSubjectSequence, String(expected)],
    [Headers.msgId, events[0]!.eventId],
    [Headers.expectedLastSubjectSequence, String(expected)],
  ];
  if (events.length > 1) {
    pairs.push([Headers.commitEvents, String(events.length)]);
    pairs.push([Headers.eventTypes, events.map((e) => e.type).join(',')]);
  }
  let bytes = 'NATS/1.0\r\n\r\n'.length;
  for (const [key, value] of pairs) bytes += key.length + value.length + 4;
  return bytes;
}
