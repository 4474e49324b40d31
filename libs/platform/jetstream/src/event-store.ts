// The JetStream event store: one subject per aggregate, one message per append (a
// commit carrying all its events), optimistic concurrency with
// Nats-Expected-Last-Subject-Sequence, idempotency with Nats-Msg-Id = the commit id.
import { injectTrace } from './trace-context.js';
import {
  DeliverPolicy,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  type PubAck,
  type StoredMsg,
  type StreamInfo,
} from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/nats-core';
import {
  Headers,
  describeFieldErrors,
  type CommitLimits,
  type EventMessage,
  type EventRegistry,
} from '@tally/contracts';
import {
  AppendOutcomeUnknown,
  ConcurrencyConflict,
  HistoryGap,
  StreamFull,
  type AppendResult,
  type EventStore,
  type LoadResult,
  type StoredEvent,
} from '@tally/eventing';

const WRONG_LAST_SEQUENCE = 10071;
const NO_MESSAGE_FOUND = 10037;
/** A store failure: with discard: new, "maximum bytes exceeded" or "maximum messages exceeded". */
const STREAM_STORE_FAILED = 10077;
/** The account or server has no room left (its own JetStream limits). */
const INSUFFICIENT_RESOURCES = 10023;

export interface JetStreamEventStoreOptions {
  readonly stream: string;
  readonly registry: EventRegistry;
  readonly publishTimeoutMs: number;
  /** Largest number of events one load may return; a bigger aggregate is a design error. */
  readonly loadEventsMax: number;
  /** How long a load waits for the next message before it declares the read stalled. */
  readonly loadIdleTimeoutMs: number;
  /**
   * A load first reads up to this many of the subject's messages by direct get
   * (next_by_subj, one round trip each), and hands whatever remains to an ordered
   * consumer, whose set-up costs several round trips. The bound counts the subject's
   * own messages, not the stream-sequence gap: in a stream shared by many aggregates the
   * gap is almost always wide while an aggregate's catch-up is a message or two. 0 turns
   * direct reads off, e.g. for a stream without allow_direct. Default DIRECT_READ_EVENTS_MAX.
   */
  readonly directReadEventsMax?: number;
  /** Most events one append may carry (one commit). Default COMMIT_EVENTS_MAX. */
  readonly commitEventsMax?: number;
  /**
   * Most bytes of one encoded commit. Default: the stream's max_msg_size (read once) less
   * HEADER_ROOM_BYTES, or NATS's default max payload when the stream sets none.
   */
  readonly commitBytesMax?: number;
}

/** Bounds a single decision, and the decode work of one message; a budget expiry sweep is the biggest writer (sweep_batch_max, default 256). */
export const COMMIT_EVENTS_MAX = 1024;
/** Room kept for the headers (a Nats-Msg-Id is up to 512 characters), which count against max_msg_size. */
export const HEADER_ROOM_BYTES = 2048;
/** NATS's default max_payload, used when the stream sets no max_msg_size. */
const DEFAULT_PAYLOAD_BYTES = 1024 * 1024;

/**
 * Measured with bench/jetstream.bench.ts on nats-server 2.9: one event reads about 5x
 * faster by direct get, four still faster, sixteen slower than an ordered consumer. A
 * load with more messages pays at most this many direct gets before the consumer.
 */
export const DIRECT_READ_EVENTS_MAX = 4;

export class JetStreamEventStore implements EventStore {
  private info: StreamInfo | undefined;

  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly options: JetStreamEventStoreOptions,
  ) {}

  /**
   * Publishes the events as ONE message, so the server stores all or none. Nats-Msg-Id is
   * the first event's id (for one event exactly what it always was): a re-sent commit
   * within the duplicate window is answered with its original sequence, flagged duplicate.
   * The id speaks for the whole commit, so a duplicate of a multi-event commit is read
   * back: a different commit that merely starts with the same event is not ours, and is
   * reported as the conflict it is (another writer got there first).
   */
  async append(
    subject: string,
    events: readonly Omit<EventMessage, 'schemaVersion'>[],
    expectedSequence: number,
  ): Promise<AppendResult> {
    const data = this.options.registry.encodeCommit(events, await this.commitLimits());
    const ack = await this.publishCommit(subject, events, data, expectedSequence);
    if (ack.duplicate && events.length > 1) await this.assertStoredCommitIs(subject, ack.seq, events, expectedSequence);
    return { sequences: events.map(() => ack.seq), duplicates: events.map(() => ack.duplicate), lastSequence: ack.seq };
  }

  private async publishCommit(
    subject: string,
    events: readonly Omit<EventMessage, 'schemaVersion'>[],
    data: Uint8Array,
    expected: number,
  ): Promise<PubAck> {
    const hdrs = natsHeaders();
    hdrs.set(Headers.eventType, events[0]!.type);
    if (events.length > 1) {
      hdrs.set(Headers.commitEvents, String(events.length));
      hdrs.set(Headers.eventTypes, events.map((e) => e.type).join(','));
    }
    hdrs.set(Headers.previousSubjectSequence, String(expected));
    injectTrace(hdrs);
    try {
      return await this.js.publish(subject, data, {
        msgID: events[0]!.eventId,
        expect: { lastSubjectSequence: expected },
        headers: hdrs,
        timeout: this.options.publishTimeoutMs,
      });
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === WRONG_LAST_SEQUENCE)
        throw new ConcurrencyConflict(subject, expected);
      if (isFullRefusal(error)) throw new StreamFull(this.options.stream, subject, error.message);
      throw new AppendOutcomeUnknown(
        subject,
        events.map((e) => e.eventId),
        error,
      );
    }
  }

  /** A duplicate ack names the stored commit's sequence; its event ids must be ours, else ours did not land. */
  private async assertStoredCommitIs(
    subject: string,
    sequence: number,
    events: readonly Omit<EventMessage, 'schemaVersion'>[],
    expected: number,
  ): Promise<void> {
    let stored: StoredEvent[];
    try {
      const msg = await this.jsm.streams.getMessage(this.options.stream, { seq: sequence });
      if (!msg) throw new Error(`no message at ${this.options.stream}#${sequence}`);
      stored = this.decodeStored(subject, sequence, msg.data);
    } catch (error) {
      throw new AppendOutcomeUnknown(
        subject,
        events.map((e) => e.eventId),
        error,
      );
    }
    const same = stored.length === events.length && stored.every((e, i) => e.event.eventId === events[i]!.eventId);
    if (!same) throw new ConcurrencyConflict(subject, expected);
  }

  private async commitLimits(): Promise<CommitLimits> {
    const eventsMax = this.options.commitEventsMax ?? COMMIT_EVENTS_MAX;
    if (this.options.commitBytesMax !== undefined) return { eventsMax, bytesMax: this.options.commitBytesMax };
    const maxMsgSize = (await this.streamInfo())?.config.max_msg_size ?? -1;
    return { eventsMax, bytesMax: (maxMsgSize > 0 ? maxMsgSize : DEFAULT_PAYLOAD_BYTES) - HEADER_ROOM_BYTES };
  }

  async lastSequence(subject: string): Promise<number> {
    return (await this.lastMessage(subject))?.seq ?? 0;
  }

  /** The subject's last commit, by direct get where the stream allows it (no JetStream API round trip). */
  private async lastMessage(subject: string): Promise<StoredMsg | undefined> {
    try {
      const msg = (await this.readsDirect())
        ? await this.jsm.direct.getMessage(this.options.stream, { last_by_subj: subject })
        : await this.jsm.streams.getMessage(this.options.stream, { last_by_subj: subject });
      return msg ?? undefined;
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === NO_MESSAGE_FOUND) return undefined;
      throw error;
    }
  }

  /**
   * One round trip when the caller is one commit behind (the common catch-up): the last
   * commit names the subject's sequence before it, so the rest is read only when the caller
   * is further behind. Every commit read must link to the one before it (and a full load's
   * first commit to nothing), else the history has a hole or a fork. A fork whose first
   * commit lies between the caller's position and a one-behind last commit is not read, so
   * not seen; servers that serialize the expected-sequence check never write one.
   */
  async load(subject: string, afterSequence = 0): Promise<LoadResult> {
    const last = await this.lastMessage(subject);
    if (!last || last.seq <= afterSequence)
      return { events: [], lastSequence: Math.max(last?.seq ?? 0, afterSequence) };
    const tail = this.decodeStored(subject, last.seq, last.data);
    const previous = previousSequenceOf(last.header);
    const chain = new HistoryChain(this.options.stream, subject, afterSequence);
    if (previous !== undefined && previous <= afterSequence) {
      chain.link(last.seq, previous);
      return { events: tail, lastSequence: last.seq };
    }
    // Up to the last commit, not only to the one it names: a commit in between would be a
    // second commit on a shared predecessor (a fork), which the chain check must see.
    const events = await this.readRange(subject, afterSequence + 1, last.seq - 1, chain);
    chain.link(last.seq, previous);
    if (events.length + tail.length > this.options.loadEventsMax)
      throw new Error(`aggregate ${subject} exceeds loadEventsMax=${this.options.loadEventsMax}`);
    return { events: [...events, ...tail], lastSequence: last.seq };
  }

  /** Reads [from, to] of one subject: small catch-ups by direct get, the rest with an ordered consumer. */
  private async readRange(subject: string, from: number, to: number, chain: HistoryChain): Promise<StoredEvent[]> {
    const events: StoredEvent[] = [];
    const next = (await this.readsDirect())
      ? await this.readDirect(subject, from, to, events, this.directReadEventsMax, chain)
      : from;
    if (next <= to) events.push(...(await this.readOrdered(subject, next, to, events.length, chain)));
    return events;
  }

  private get directReadEventsMax(): number {
    return this.options.directReadEventsMax ?? DIRECT_READ_EVENTS_MAX;
  }

  /**
   * Whether loads read by direct get: they are not turned off, and the stream answers them
   * (a get to a stream without allow_direct waits for a timeout).
   */
  private async readsDirect(): Promise<boolean> {
    return this.directReadEventsMax > 0 && (await this.streamInfo())?.config.allow_direct === true;
  }

  /** The stream's settings, asked once (they are verified at start-up and do not change under us). */
  private async streamInfo(): Promise<StreamInfo | undefined> {
    this.info ??= await this.jsm.streams.info(this.options.stream).catch(() => undefined);
    return this.info;
  }

  /**
   * Reads at most `messagesMax` messages with next_by_subj direct gets up to `to`, and
   * returns the sequence to go on from. A gap (no message where one must be, as from a lagging replica answering a
   * direct get) or a failed get (a stream without allow_direct has no responders) hands
   * the rest over to the ordered consumer, which reads the same messages.
   */
  private async readDirect(
    subject: string,
    from: number,
    to: number,
    into: StoredEvent[],
    messagesMax: number,
    chain: HistoryChain,
  ): Promise<number> {
    let next = from;
    for (let read = 0; next <= to && read < messagesMax; read++) {
      const msg = await this.jsm.direct
        .getMessage(this.options.stream, { seq: next, next_by_subj: subject })
        .catch(() => undefined);
      if (msg === undefined) return next;
      if (!msg || msg.seq > to) return msg ? to + 1 : next;
      chain.link(msg.seq, previousSequenceOf(msg.header));
      into.push(...this.decodeStored(subject, msg.seq, msg.data));
      next = msg.seq + 1;
    }
    return next;
  }

  /** Reads [from, to] of one subject with an ordered consumer, which has flow control and no acks. */
  private async readOrdered(
    subject: string,
    from: number,
    to: number,
    alreadyRead: number,
    chain: HistoryChain,
  ): Promise<StoredEvent[]> {
    const consumer = await this.js.consumers.get(this.options.stream, {
      filter_subjects: subject,
      opt_start_seq: from,
      deliver_policy: DeliverPolicy.StartSequence,
    });
    const messages = await consumer.consume({ max_messages: 512, idle_heartbeat: this.options.loadIdleTimeoutMs });
    const events: StoredEvent[] = [];
    try {
      for await (const msg of messages) {
        // Past the range: the commits the range should hold are gone; the caller's link check says so.
        if (msg.seq > to) break;
        chain.link(msg.seq, previousSequenceOf(msg.headers));
        events.push(...this.decodeStored(subject, msg.seq, msg.data));
        if (alreadyRead + events.length > this.options.loadEventsMax)
          throw new Error(`aggregate ${subject} exceeds loadEventsMax=${this.options.loadEventsMax}`);
        if (msg.seq >= to) break;
      }
    } finally {
      await messages.close();
    }
    return events;
  }

  /** One message is one commit: its events, in commit order, at the message's sequence. */
  private decodeStored(subject: string, sequence: number, data: Uint8Array): StoredEvent[] {
    const decoded = this.options.registry.decodeCommit(data);
    // A stored event that no longer decodes is a bug or a missing upcaster: fail loudly.
    if (!decoded.ok)
      throw new Error(
        `event at ${this.options.stream}#${sequence} does not decode: ${describeFieldErrors(decoded.errors)}`,
      );
    return decoded.value.map((event, position) => ({ sequence, subject, event, position }));
  }
}

/**
 * The subject's sequence before this commit, from the header the append wrote (or the
 * server's expected-sequence header it was checked against); undefined when neither is
 * there, e.g. a message some other writer published, and the caller reads the range instead.
 */
function previousSequenceOf(header: { get(key: string): string } | undefined): number | undefined {
  const raw = header?.get(Headers.previousSubjectSequence) || header?.get(Headers.expectedLastSubjectSequence);
  if (!raw || !/^\d{1,16}$/.test(raw)) return undefined;
  return Number(raw);
}

/**
 * Follows the commits of one load in order. Each commit names the subject's sequence before
 * it; when that is not the commit read just before (or, for the first one, is not where the
 * load started: 0 for a full load), a commit is missing or two commits share a predecessor
 * (a fork), and the load fails loudly.
 * A commit with no link (another writer's message) is taken as it is.
 */
class HistoryChain {
  private lastSeq: number | undefined;
  constructor(
    private readonly stream: string,
    private readonly subject: string,
    private readonly afterSequence: number,
  ) {}

  link(seq: number, previous: number | undefined): void {
    const expected = this.lastSeq;
    this.lastSeq = seq;
    if (previous === undefined) return;
    if (previous >= seq)
      throw new HistoryGap(this.stream, this.subject, `commit #${seq} claims to follow #${previous}`);
    // The commit before this one (or the caller's position, a commit of this subject) is later
    // than the predecessor this one names: two commits claim the same predecessor.
    const before = expected ?? this.afterSequence;
    if (previous < before)
      throw new HistoryGap(
        this.stream,
        this.subject,
        `commit #${seq} follows #${previous}, but #${before} already follows it: two commits claim the ` +
          `same predecessor (a fork; the server did not serialize the expected-sequence check, nats-server#4320)`,
      );
    if (expected === undefined ? previous > this.afterSequence : previous !== expected) {
      const read = expected === undefined ? `the start of the load (after #${this.afterSequence})` : `#${expected}`;
      throw new HistoryGap(
        this.stream,
        this.subject,
        `commit #${seq} follows #${previous}, but the commit read before it is ${read}: #${previous} is missing`,
      );
    }
  }
}

/** A publish error that is a full stream's refusal, as StreamFull; undefined for any other error. */
export function streamFullOf(error: unknown, stream: string, subject: string): StreamFull | undefined {
  return isFullRefusal(error) ? new StreamFull(stream, subject, error.message) : undefined;
}

/** The server refused the message for lack of room: with discard: new nothing was stored. */
function isFullRefusal(error: unknown): error is JetStreamApiError {
  if (!(error instanceof JetStreamApiError)) return false;
  if (error.code === INSUFFICIENT_RESOURCES) return true;
  return error.code === STREAM_STORE_FAILED && /maximum (bytes|messages)/i.test(error.message);
}
