// The JetStream event store: one subject per aggregate, optimistic concurrency with
// Nats-Expected-Last-Subject-Sequence, idempotency with Nats-Msg-Id = event id.
import { DeliverPolicy, JetStreamApiError, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { Headers, describeFieldErrors, type EventMessage, type EventRegistry } from '@tally/contracts';
import { AppendOutcomeUnknown, ConcurrencyConflict, type AppendResult, type EventStore, type LoadResult, type StoredEvent } from '@tally/eventing';

const WRONG_LAST_SEQUENCE = 10071;
const NO_MESSAGE_FOUND = 10037;

export interface JetStreamEventStoreOptions {
  readonly stream: string;
  readonly registry: EventRegistry;
  readonly publishTimeoutMs: number;
  /** Largest number of events one load may return; a bigger aggregate is a design error. */
  readonly loadEventsMax: number;
  /** How long a load waits for the next message before it declares the read stalled. */
  readonly loadIdleTimeoutMs: number;
  /**
   * Events a load reads one by one with direct gets (one round trip each) before it
   * switches to an ordered consumer, whose set-up costs several round trips. 0 turns
   * direct reads off, e.g. for a stream without allow_direct. Default DIRECT_READ_EVENTS_MAX.
   */
  readonly directReadEventsMax?: number;
}

/** Measured on nats-server 2.9 (bench/jetstream.bench.ts): direct gets win below a few dozen events. */
export const DIRECT_READ_EVENTS_MAX = 32;

export class JetStreamEventStore implements EventStore {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly options: JetStreamEventStoreOptions,
  ) {}

  async append(subject: string, events: readonly Omit<EventMessage, 'schemaVersion'>[], expectedSequence: number): Promise<AppendResult> {
    const sequences: number[] = [];
    const duplicates: boolean[] = [];
    let expected = expectedSequence;
    for (const event of events) {
      const ack = await this.publishOne(subject, event, expected);
      sequences.push(ack.seq);
      duplicates.push(ack.duplicate);
      expected = ack.seq;
    }
    return { sequences, duplicates, lastSequence: expected };
  }

  private async publishOne(subject: string, event: Omit<EventMessage, 'schemaVersion'>, expected: number) {
    const data = this.options.registry.encode(event);
    const hdrs = natsHeaders();
    hdrs.set(Headers.eventType, event.type);
    try {
      return await this.js.publish(subject, data, {
        msgID: event.eventId,
        expect: { lastSubjectSequence: expected },
        headers: hdrs,
        timeout: this.options.publishTimeoutMs,
      });
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === WRONG_LAST_SEQUENCE) throw new ConcurrencyConflict(subject, expected);
      throw new AppendOutcomeUnknown(subject, [event.eventId], error);
    }
  }

  async lastSequence(subject: string): Promise<number> {
    try {
      const msg = await this.jsm.streams.getMessage(this.options.stream, { last_by_subj: subject });
      return msg?.seq ?? 0;
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === NO_MESSAGE_FOUND) return 0;
      throw error;
    }
  }

  async load(subject: string, afterSequence = 0): Promise<LoadResult> {
    const lastSequence = await this.lastSequence(subject);
    if (lastSequence <= afterSequence) return { events: [], lastSequence: Math.max(lastSequence, afterSequence) };
    const events = await this.readRange(subject, afterSequence + 1, lastSequence);
    return { events, lastSequence };
  }

  /** Reads [from, to] of one subject: small catch-ups by direct get, the rest with an ordered consumer. */
  private async readRange(subject: string, from: number, to: number): Promise<StoredEvent[]> {
    const events: StoredEvent[] = [];
    const next = await this.readDirect(subject, from, to, events);
    if (next <= to) events.push(...(await this.readOrdered(subject, next, to, events.length)));
    return events;
  }

  /**
   * Reads with next_by_subj direct gets until `to`, or until directReadEventsMax events.
   * Returns the sequence to continue from. A gap (no message where one must be, as from a
   * lagging replica answering a direct get) hands over to the ordered consumer.
   */
  private async readDirect(subject: string, from: number, to: number, into: StoredEvent[]): Promise<number> {
    const max = this.options.directReadEventsMax ?? DIRECT_READ_EVENTS_MAX;
    let next = from;
    for (let read = 0; read < max && next <= to; read++) {
      const msg = await this.jsm.direct.getMessage(this.options.stream, { seq: next, next_by_subj: subject });
      if (!msg || msg.seq > to) return next;
      into.push(this.decodeStored(subject, msg.seq, msg.data));
      if (into.length > this.options.loadEventsMax) throw new Error(`aggregate ${subject} exceeds loadEventsMax=${this.options.loadEventsMax}`);
      next = msg.seq + 1;
    }
    return next;
  }

  /** Reads [from, to] of one subject with an ordered consumer, which has flow control and no acks. */
  private async readOrdered(subject: string, from: number, to: number, alreadyRead: number): Promise<StoredEvent[]> {
    const consumer = await this.js.consumers.get(this.options.stream, { filter_subjects: subject, opt_start_seq: from, deliver_policy: DeliverPolicy.StartSequence });
    const messages = await consumer.consume({ max_messages: 512, idle_heartbeat: this.options.loadIdleTimeoutMs });
    const events: StoredEvent[] = [];
    try {
      for await (const msg of messages) {
        events.push(this.decodeStored(subject, msg.seq, msg.data));
        if (alreadyRead + events.length > this.options.loadEventsMax) throw new Error(`aggregate ${subject} exceeds loadEventsMax=${this.options.loadEventsMax}`);
        if (msg.seq >= to) break;
      }
    } finally {
      await messages.close();
    }
    return events;
  }

  private decodeStored(subject: string, sequence: number, data: Uint8Array): StoredEvent {
    const decoded = this.options.registry.decode(data);
    // A stored event that no longer decodes is a bug or a missing upcaster: fail loudly.
    if (!decoded.ok) throw new Error(`event at ${this.options.stream}#${sequence} does not decode: ${describeFieldErrors(decoded.errors)}`);
    return { sequence, subject, event: decoded.value };
  }
}
