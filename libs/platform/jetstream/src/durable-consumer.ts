// A pull consumer loop with every limit explicit. Each message ends in exactly one of
// ack, nak(delay) or term, and a message that is terminated is first copied to the
// dead-letter stream with its reason, so nothing is silently dropped.
import type { JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Decoded, FieldError, TallyNames } from '@tally/contracts';
import { publishDeadLetter, type DeadLetter } from './dead-letter.js';
import { versionAtLeast } from './durability.js';
import { ensureConsumer } from './provisioning.js';

export interface ConsumerLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** A decode failure may say which kind it is; otherwise malformed JSON counts as decode_failed. */
export type ConsumerDecoded<T> =
  | Decoded<T>
  | { readonly ok: false; readonly errors: FieldError[]; readonly reason: 'decode_failed' | 'validation_failed' };

/** Thrown by a handler for a message that can never succeed: it is dead-lettered at once. */
export class PermanentFailure extends Error {
  override readonly name = 'PermanentFailure';
}

export interface DurableConsumerOptions<T> {
  /** Only read for the server version: term(reason) needs nats-server 2.11. */
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly names: TallyNames;
  readonly stream: string;
  readonly durable: string;
  readonly filterSubject: string;
  /** Dead letters from this consumer land on names.deadLetterSubject(deadLetterSource). */
  readonly deadLetterSource: string;
  readonly ackWaitMs: number;
  /** Handler attempts before the message is dead-lettered with max_deliveries_exceeded. */
  readonly deliveriesMax: number;
  readonly ackPendingMax: number;
  readonly fetchBatch: number;
  /** Handlers running at once; a fetch never asks for more messages than free slots. */
  readonly concurrency: number;
  /** How long one pull waits for messages (the client's minimum is 1000). */
  readonly expiresMs: number;
  /** A running handler tells the server it is alive this often; keep it well below ackWaitMs. */
  readonly workingIntervalMs: number;
  /** nak delay after the first failure; it doubles per delivery up to nakDelayMaxMs. */
  readonly nakDelayMs: number;
  readonly nakDelayMaxMs: number;
  /** Timeout for ack confirmation and dead-letter publishes. */
  readonly ackTimeoutMs: number;
  /** Pause after a failed fetch (consumer gone, server restarting) before the next one. */
  readonly fetchRetryDelayMs: number;
  /** stop() waits this long for running handlers; their messages are redelivered after ackWait. */
  readonly stopTimeoutMs: number;
  readonly decode: (msg: JsMsg) => ConsumerDecoded<T>;
  readonly handle: (value: T, msg: JsMsg) => Promise<void>;
  readonly logger?: ConsumerLogger;
}

export interface DurableConsumerHandle {
  /** Stops fetching and waits (bounded by stopTimeoutMs) for running handlers. */
  stop(): Promise<void>;
}

type Outcome = { readonly ok: true } | { readonly ok: false; readonly error: unknown };

export function nakDelayFor(deliveryCount: number, baseMs: number, maxMs: number): number {
  const exponent = Math.min(Math.max(deliveryCount - 1, 0), 30);
  return Math.min(maxMs, baseMs * 2 ** exponent);
}

function assertOptions<T>(o: DurableConsumerOptions<T>): void {
  const positive = [
    'ackWaitMs',
    'deliveriesMax',
    'ackPendingMax',
    'fetchBatch',
    'concurrency',
    'workingIntervalMs',
    'nakDelayMs',
    'ackTimeoutMs',
    'fetchRetryDelayMs',
    'stopTimeoutMs',
  ] as const;
  for (const key of positive)
    if (!(o[key] > 0)) throw new Error(`consumer ${o.durable}: ${key} must be > 0, got ${o[key]}`);
  if (!(o.expiresMs >= 1000)) throw new Error(`consumer ${o.durable}: expiresMs must be >= 1000`);
  if (!(o.nakDelayMaxMs >= o.nakDelayMs)) throw new Error(`consumer ${o.durable}: nakDelayMaxMs must be >= nakDelayMs`);
  if (!(o.workingIntervalMs < o.ackWaitMs))
    throw new Error(`consumer ${o.durable}: workingIntervalMs must be < ackWaitMs`);
}

/**
 * Creates (or updates) the durable consumer and starts pulling. The server may deliver
 * a message once more than deliveriesMax: that spare delivery exists for a message
 * whose last attempt crashed or whose dead-letter publish failed, and it is
 * dead-lettered without running the handler again.
 */
export async function startDurableConsumer<T>(options: DurableConsumerOptions<T>): Promise<DurableConsumerHandle> {
  assertOptions(options);
  await ensureConsumer(options.jsm, {
    stream: options.stream,
    durable: options.durable,
    filterSubject: options.filterSubject,
    ackWaitMs: options.ackWaitMs,
    deliveriesMax: options.deliveriesMax + 1,
    ackPendingMax: options.ackPendingMax,
  });
  const consumer = await options.js.consumers.get(options.stream, options.durable);
  // nats-server before 2.11 ignores "+TERM <reason>" entirely and redelivers the message.
  const termWithReason = versionAtLeast(options.nc.info?.version ?? '0.0.0', '2.11.0');
  const loop = new ConsumerLoop(options, consumer, termWithReason);
  const done = loop.run();
  return {
    async stop() {
      await loop.stop(done);
    },
  };
}

type PullConsumer = Awaited<ReturnType<JetStreamClient['consumers']['get']>>;
type Fetched = Awaited<ReturnType<PullConsumer['fetch']>>;

class ConsumerLoop<T> {
  private stopping = false;
  private current: Fetched | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private wake: (() => void) | undefined;
  private interrupt: (() => void) | undefined;
  private fetchFailures = 0;

  constructor(
    private readonly o: DurableConsumerOptions<T>,
    private readonly consumer: PullConsumer,
    private readonly termWithReason: boolean,
  ) {}

  async run(): Promise<void> {
    while (!this.stopping) {
      const free = this.o.concurrency - this.inFlight.size;
      if (free <= 0) {
        await this.nextWake();
        continue;
      }
      try {
        this.current = await this.consumer.fetch({
          max_messages: Math.min(this.o.fetchBatch, free),
          expires: this.o.expiresMs,
        });
        for await (const msg of this.current) this.dispatch(msg);
        if (this.fetchFailures > 0)
          this.o.logger?.info('fetching again', { durable: this.o.durable, failedFetches: this.fetchFailures });
        this.fetchFailures = 0;
      } catch (error) {
        if (this.stopping) break;
        // One line per outage (and a reminder every 100 failures), not one per retry.
        if (this.fetchFailures++ % 100 === 0)
          this.o.logger?.warn('fetch failed; retrying', {
            durable: this.o.durable,
            failedFetches: this.fetchFailures,
            error: String(error),
          });
        await this.sleep(this.o.fetchRetryDelayMs);
      } finally {
        this.current = undefined;
      }
    }
  }

  private dispatch(msg: JsMsg): void {
    if (this.stopping) {
      // Delivered after stop() began: hand it back at once rather than wait for ackWait.
      msg.nak();
      return;
    }
    const task = this.process(msg).catch((error: unknown) => {
      // process() ends every path with ack/nak/term; reaching here is a bug worth shouting about.
      this.o.logger?.error('message processing crashed', {
        durable: this.o.durable,
        seq: msg.seq,
        error: String(error),
      });
    });
    this.inFlight.add(task);
    void task.finally(() => {
      this.inFlight.delete(task);
      this.wake?.();
    });
  }

  /** Resolves when a handler finishes (a slot is free) or stop() is called. */
  private nextWake(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = () => {
        this.wake = undefined;
        resolve();
      };
    });
  }

  /** Waits ms, or less when stop() is called; a finishing handler does not cut it short. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.interrupt = undefined;
        resolve();
      }, ms);
      this.interrupt = () => {
        clearTimeout(timer);
        this.interrupt = undefined;
        resolve();
      };
    });
  }

  async stop(done: Promise<void>): Promise<void> {
    this.stopping = true;
    this.wake?.();
    this.interrupt?.();
    await this.current?.close().catch(() => undefined);
    await done;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.o.stopTimeoutMs)));
    await Promise.race([Promise.allSettled([...this.inFlight]), timeout]);
    clearTimeout(timer);
    if (this.inFlight.size > 0)
      this.o.logger?.warn('stopped with handlers still running', {
        durable: this.o.durable,
        running: this.inFlight.size,
      });
  }

  private async process(msg: JsMsg): Promise<void> {
    const decoded = safeDecode(this.o.decode, msg);
    if (!decoded.ok) {
      const reason = 'reason' in decoded ? decoded.reason : classify(decoded.errors);
      await this.deadLetterThenTerm(
        msg,
        reason,
        `${reason}: ${decoded.errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`,
        decoded.errors,
      );
      return;
    }
    const deliveries = msg.info.deliveryCount;
    if (deliveries > this.o.deliveriesMax) {
      await this.deadLetterThenTerm(
        msg,
        'max_deliveries_exceeded',
        `delivery ${deliveries} exceeds deliveriesMax=${this.o.deliveriesMax}; the last attempt did not finish`,
      );
      return;
    }
    const outcome = await this.runHandler(decoded.value, msg);
    if (outcome.ok) {
      await this.ack(msg);
    } else if (outcome.error instanceof PermanentFailure) {
      await this.deadLetterThenTerm(msg, 'handler_rejected', outcome.error.message);
    } else if (deliveries >= this.o.deliveriesMax) {
      await this.deadLetterThenTerm(
        msg,
        'max_deliveries_exceeded',
        `after ${deliveries} deliveries: ${errorText(outcome.error)}`,
      );
    } else {
      msg.nak(nakDelayFor(deliveries, this.o.nakDelayMs, this.o.nakDelayMaxMs));
    }
  }

  /** Runs the handler while telling the server, every workingIntervalMs, that it is still busy. */
  private async runHandler(value: T, msg: JsMsg): Promise<Outcome> {
    const heartbeat = setInterval(() => msg.working(), this.o.workingIntervalMs);
    try {
      await this.o.handle(value, msg);
      return { ok: true };
    } catch (error) {
      return { ok: false, error };
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** A lost ack only means a redelivery, which handlers absorb; it is logged, not retried. */
  private async ack(msg: JsMsg): Promise<void> {
    const confirmed = await msg.ackAck({ timeout: this.o.ackTimeoutMs }).then(
      (ok) => ok,
      () => false,
    );
    if (!confirmed)
      this.o.logger?.warn('ack not confirmed; the message may be redelivered', {
        durable: this.o.durable,
        seq: msg.seq,
      });
  }

  private async deadLetterThenTerm(
    msg: JsMsg,
    reason: DeadLetter['reason'],
    detail: string,
    errors?: FieldError[],
  ): Promise<void> {
    const letter: DeadLetter = {
      source: this.o.deadLetterSource,
      reason,
      detail,
      ...(errors ? { errors } : {}),
      originalSubject: msg.subject,
      originalStream: msg.info.stream,
      originalSequence: msg.seq,
      deliveries: msg.info.deliveryCount,
      data: msg.data,
      ...(msg.headers ? { headers: msg.headers } : {}),
    };
    const published = await publishDeadLetter(this.o.js, this.o.names, letter, this.o.ackTimeoutMs).then(
      () => true,
      (error: unknown) => {
        this.o.logger?.error('dead-letter publish failed; the message will be redelivered', {
          durable: this.o.durable,
          seq: msg.seq,
          error: String(error),
        });
        return false;
      },
    );
    // Terminate only what is safely copied; otherwise let it come back and try again.
    if (published) msg.term(this.termWithReason ? reason : undefined);
    else msg.nak(this.o.nakDelayMaxMs);
  }
}

/** A decoder that throws is treated like one that refuses: the message is poison either way. */
function safeDecode<T>(decode: (msg: JsMsg) => ConsumerDecoded<T>, msg: JsMsg): ConsumerDecoded<T> {
  try {
    return decode(msg);
  } catch (error) {
    return {
      ok: false,
      reason: 'decode_failed',
      errors: [{ field: '$', message: `decoder threw: ${errorText(error)}` }],
    };
  }
}

function classify(errors: readonly FieldError[]): 'decode_failed' | 'validation_failed' {
  return errors.some((e) => e.field === '$' && e.message.startsWith('malformed JSON'))
    ? 'decode_failed'
    : 'validation_failed';
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
