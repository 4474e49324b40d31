// Reads a subject range of one stream with an ordered consumer and hands it out in
// batches. No durable consumer and no acks: the projection's checkpoint, committed with
// its rows, says where to resume, so the read position lives in the database only.
// One message is one commit of one or more events sharing its stream sequence, and the
// checkpoint is a stream sequence: a batch therefore always holds whole commits.
import { DeliverPolicy, type ConsumerMessages, type JetStreamClient, type JsMsg } from '@nats-io/jetstream';
import { describeFieldErrors, type EventRegistry } from '@tally/contracts';
import type { StoredEvent } from '@tally/eventing';

export interface EventReadLimits {
  /** How many messages the client may buffer ahead of the projector (flow control). */
  readonly prefetchMessagesMax: number;
  /** Heartbeat the server sends on an idle ordered consumer; missing ones make the client recreate it. */
  readonly idleHeartbeatMs: number;
  /** Lifetime of one pull request; the client renews it. Must exceed idleHeartbeatMs. */
  readonly pullExpiresMs: number;
}

export interface EventBatchReaderOptions extends EventReadLimits {
  readonly stream: string;
  readonly filterSubject: string;
  /** First stream sequence to deliver (checkpoint + 1). */
  readonly startSequence: number;
  readonly registry: EventRegistry;
}

/**
 * A stored event that fails to decode is a bug or a missing upcaster: never skipped silently.
 * The runner quarantines its aggregate (ADR 0045), naming the fields at fault, never their values.
 */
export class UndecodableEvent extends Error {
  override readonly name = 'UndecodableEvent';
  constructor(
    readonly stream: string,
    readonly sequence: number,
    detail: string,
    readonly subject = '',
    /** The envelope's `type` when it has a readable one; `unknown` otherwise. */
    readonly eventType = 'unknown',
    /** The fields at fault (names only). */
    readonly fields: readonly string[] = [],
  ) {
    super(`event at ${stream}#${sequence} does not decode: ${detail}`);
  }
}

export interface ReadRequest {
  /** Most events in the batch; a first commit bigger than this still comes whole, alone. */
  readonly limit: number;
  /** Most commits (stream messages) in the batch; undefined: no limit but `limit`. */
  readonly commitsMax?: number;
  readonly batchWaitMs: number;
  readonly firstWaitMs: number | undefined;
  readonly stop: Promise<void>;
  readonly stopAtEnd: boolean;
}

const TIMEOUT: unique symbol = Symbol('timeout');
type Next = IteratorResult<JsMsg>;

/** A decoded message: its events and the stream's pending count when it was delivered. */
interface Commit {
  readonly events: StoredEvent[];
  readonly pending: number;
}

export class EventBatchReader {
  private next: Promise<Next> | undefined;
  /** Messages still in the stream (after the last one handed out) when that one was delivered. */
  private pendingAfterLast: number;
  private failure: Error | undefined;
  /** The stream's pending count when the last undecodable message was delivered. */
  private undecodablePending = 0;
  /** A commit read but not handed out, because it did not fit the last batch. */
  private held: Commit | undefined;

  private constructor(
    private readonly options: EventBatchReaderOptions,
    private readonly messages: ConsumerMessages,
    private readonly iterator: AsyncIterator<JsMsg>,
    /** Matching messages at or after startSequence when the consumer was created. */
    readonly pendingAtStart: number,
  ) {
    this.pendingAfterLast = pendingAtStart;
  }

  static async open(js: JetStreamClient, options: EventBatchReaderOptions): Promise<EventBatchReader> {
    if (!(options.startSequence >= 1)) throw new Error(`startSequence must be >= 1, got ${options.startSequence}`);
    if (!(options.idleHeartbeatMs < options.pullExpiresMs))
      throw new Error('idleHeartbeatMs must be below pullExpiresMs');
    const consumer = await js.consumers.get(options.stream, {
      filter_subjects: options.filterSubject,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: options.startSequence,
    });
    const info = await consumer.info(true);
    const messages = await consumer.consume({
      max_messages: options.prefetchMessagesMax,
      idle_heartbeat: options.idleHeartbeatMs,
      expires: options.pullExpiresMs,
    });
    return new EventBatchReader(options, messages, messages[Symbol.asyncIterator](), info.num_pending);
  }

  /** True once the last message handed out was the stream's last matching one at its delivery. */
  get reachedEnd(): boolean {
    return this.pendingAfterLast === 0;
  }

  /**
   * Steps over the message that did not decode, once the caller has set it aside (ADR 0045):
   * the next read goes on with the message after it, on the same consumer. (A new consumer
   * would have to trust the server's pending count from an arbitrary sequence, which the
   * server this runs on does not always get right.)
   */
  stepOverUndecodable(): void {
    this.failure = undefined;
    this.pendingAfterLast = this.undecodablePending;
  }

  /**
   * Returns up to `limit` events in whole commits. It waits for the first commit until
   * `stop` settles or `firstWaitMs` passes (undefined: no time limit), then returns []; after
   * the first one it waits at most `batchWaitMs` for more, or not at all once the stream's
   * end is reached when `stopAtEnd` (catch-up must not idle at the end; live mode coalesces).
   * A commit that would overflow `limit` is kept for the next read.
   */
  async read(request: ReadRequest): Promise<StoredEvent[]> {
    const { limit, batchWaitMs, firstWaitMs, stop, stopAtEnd } = request;
    const commitsMax = request.commitsMax ?? Number.POSITIVE_INFINITY;
    if (this.failure) throw this.failure;
    const batch: StoredEvent[] = [];
    if (limit <= 0 || commitsMax <= 0) return batch;
    const first = await this.takeFirst(stop, firstWaitMs);
    if (first === TIMEOUT) return batch;
    this.handOut(batch, first);
    let commits = 1;
    const deadline = timer(batchWaitMs);
    try {
      while (batch.length < limit && commits < commitsMax && !(stopAtEnd && this.reachedEnd)) {
        const commit = await this.takeCommit(deadline.fired, false);
        if (commit === TIMEOUT) break;
        if (batch.length + commit.events.length > limit) {
          this.held = commit;
          break;
        }
        this.handOut(batch, commit);
        commits++;
      }
    } finally {
      deadline.clear();
    }
    return batch;
  }

  /** The first commit of a batch: a held one, else the next message; a decode failure throws here. */
  private async takeFirst(stop: Promise<void>, firstWaitMs: number | undefined): Promise<Commit | typeof TIMEOUT> {
    const firstTimer = firstWaitMs === undefined ? undefined : timer(firstWaitMs);
    try {
      return await this.takeCommit(
        Promise.race([stop.then((): typeof TIMEOUT => TIMEOUT), ...(firstTimer ? [firstTimer.fired] : [])]),
        true,
      );
    } finally {
      firstTimer?.clear();
    }
  }

  /** The held commit or the next message decoded; a later decode failure is kept so the commits before it still commit. */
  private async takeCommit(timer: Promise<typeof TIMEOUT>, first: boolean): Promise<Commit | typeof TIMEOUT> {
    if (this.held) {
      const held = this.held;
      this.held = undefined;
      return held;
    }
    const msg = await this.take(timer);
    if (msg === TIMEOUT) return TIMEOUT;
    if (first) return this.decode(msg);
    const commit = this.decodeOrHold(msg);
    return commit ?? TIMEOUT;
  }

  private handOut(batch: StoredEvent[], commit: Commit): void {
    batch.push(...commit.events);
    this.pendingAfterLast = commit.pending;
  }

  /**
   * Stops the consumer. The client finishes closing only while its iterator is being read,
   * so the messages still buffered are drained (and dropped: they are above the checkpoint
   * and will be read again) until the iterator reports its end.
   */
  async close(): Promise<void> {
    const closed = this.messages.close();
    for (;;) {
      const result = await (this.next ?? this.iterator.next());
      this.next = undefined;
      if (result.done) break;
    }
    await closed;
  }

  /** Waits for the next message or the timer; a message that loses the race is kept for the next call. */
  private async take(timer: Promise<typeof TIMEOUT>): Promise<JsMsg | typeof TIMEOUT> {
    this.next ??= this.iterator.next();
    const result = await Promise.race([this.next, timer]);
    if (result === TIMEOUT) return TIMEOUT;
    this.next = undefined;
    if (result.done) throw new Error(`ordered consumer on ${this.options.stream} ended unexpectedly`);
    return result.value;
  }

  /** Decodes, or keeps the failure for the next read so the commits before it still commit. */
  private decodeOrHold(msg: JsMsg): Commit | undefined {
    try {
      return this.decode(msg);
    } catch (error) {
      this.failure = error as Error;
      return undefined;
    }
  }

  private decode(msg: JsMsg): Commit {
    const decoded = this.options.registry.decodeCommit(msg.data);
    // Once stepped over, the undecodable message counts as handed out, for reachedEnd.
    if (!decoded.ok) this.undecodablePending = msg.info.pending;
    if (!decoded.ok)
      throw new UndecodableEvent(
        this.options.stream,
        msg.seq,
        describeFieldErrors(decoded.errors),
        msg.subject,
        envelopeType(msg.data),
        decoded.errors.map((e) => e.field),
      );
    const traceparent = msg.headers?.get('traceparent') || undefined;
    const events = decoded.value.map((event, position) => ({
      sequence: msg.seq,
      subject: msg.subject,
      event,
      position,
      ...(traceparent === undefined ? {} : { traceparent }),
    }));
    return { events, pending: msg.info.pending };
  }
}

const EVENT_TYPE = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

/** The `type` an undecodable message claims, when it has one that looks like a type name (never other text). */
function envelopeType(data: Uint8Array): string {
  try {
    const plain = JSON.parse(new TextDecoder().decode(data)) as { type?: unknown; events?: unknown };
    if (typeof plain.type === 'string' && EVENT_TYPE.test(plain.type)) return plain.type;
    return Array.isArray(plain.events) ? 'commit' : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** A cancellable timer that resolves to TIMEOUT and does not keep the process alive. */
function timer(ms: number): { fired: Promise<typeof TIMEOUT>; clear(): void } {
  let handle: NodeJS.Timeout | undefined;
  const fired = new Promise<typeof TIMEOUT>((resolve) => {
    handle = setTimeout(() => resolve(TIMEOUT), ms);
    handle.unref();
  });
  return { fired, clear: () => clearTimeout(handle) };
}
