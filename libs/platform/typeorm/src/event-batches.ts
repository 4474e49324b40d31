// Reads a subject range of one stream with an ordered consumer and hands it out in
// batches. No durable consumer and no acks: the projection's checkpoint, committed with
// its rows, says where to resume, so the read position lives in the database only.
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

/** A stored event that fails to decode is a bug or a missing upcaster: never skipped. */
export class UndecodableEvent extends Error {
  override readonly name = 'UndecodableEvent';
  constructor(
    readonly stream: string,
    readonly sequence: number,
    detail: string,
  ) {
    super(`event at ${stream}#${sequence} does not decode: ${detail}`);
  }
}

export interface ReadRequest {
  readonly limit: number;
  readonly batchWaitMs: number;
  readonly firstWaitMs: number | undefined;
  readonly stop: Promise<void>;
  readonly stopAtEnd: boolean;
}

const TIMEOUT: unique symbol = Symbol('timeout');
type Next = IteratorResult<JsMsg>;

export class EventBatchReader {
  private next: Promise<Next> | undefined;
  /** Messages still in the stream (after the last one handed out) when that one was delivered. */
  private pendingAfterLast: number;
  private failure: Error | undefined;

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
    if (!(options.idleHeartbeatMs < options.pullExpiresMs)) throw new Error('idleHeartbeatMs must be below pullExpiresMs');
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
   * Returns up to `limit` events. It waits for the first one until `stop` settles or
   * `firstWaitMs` passes (undefined: no time limit), then returns []; after the first
   * one it waits at most `batchWaitMs` for the rest, or not at all once the stream's end
   * is reached when `stopAtEnd` (catch-up must not idle at the end; live mode coalesces).
   */
  async read(request: ReadRequest): Promise<StoredEvent[]> {
    const { limit, batchWaitMs, firstWaitMs, stop, stopAtEnd } = request;
    if (this.failure) throw this.failure;
    const batch: StoredEvent[] = [];
    if (limit <= 0) return batch;
    const firstTimer = firstWaitMs === undefined ? undefined : timer(firstWaitMs);
    let first: JsMsg | typeof TIMEOUT;
    try {
      first = await this.take(Promise.race([stop.then((): typeof TIMEOUT => TIMEOUT), ...(firstTimer ? [firstTimer.fired] : [])]));
    } finally {
      firstTimer?.clear();
    }
    if (first === TIMEOUT) return batch;
    batch.push(this.decode(first));
    const deadline = timer(batchWaitMs);
    try {
      while (batch.length < limit && !(stopAtEnd && this.reachedEnd)) {
        const msg = await this.take(deadline.fired);
        if (msg === TIMEOUT) break;
        const event = this.decodeOrHold(msg);
        if (!event) break;
        batch.push(event);
      }
    } finally {
      deadline.clear();
    }
    return batch;
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
    this.pendingAfterLast = result.value.info.pending;
    return result.value;
  }

  /** Decodes, or keeps the failure for the next read so the events before it still commit. */
  private decodeOrHold(msg: JsMsg): StoredEvent | undefined {
    try {
      return this.decode(msg);
    } catch (error) {
      this.failure = error as Error;
      return undefined;
    }
  }

  private decode(msg: JsMsg): StoredEvent {
    const decoded = this.options.registry.decode(msg.data);
    if (!decoded.ok) throw new UndecodableEvent(this.options.stream, msg.seq, describeFieldErrors(decoded.errors));
    return { sequence: msg.seq, subject: msg.subject, event: decoded.value };
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
