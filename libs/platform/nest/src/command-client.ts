// The caller's side of a durable command. One inbox subscription per client and a
// correlation map keyed by command id keep the hot path to: one JetStream publish
// (with its PubAck) and one reply message. Nothing is set up per call.
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import {
  createInbox,
  headers as natsHeaders,
  type Msg,
  type NatsConnection,
  type Subscription,
} from '@nats-io/nats-core';
import { Headers, type CommandService, type TallyNames } from '@tally/contracts';
import { activeTraceparent } from '@tally/platform-jetstream';
import type { CommandSender } from './command-sender.js';
import { ReplyCache } from './reply-cache.js';
import { commandIdProblem, decodeReply, type CommandReply } from './wire.js';

export interface JetStreamCommandClientOptions {
  readonly names: TallyNames;
  /** Bound on the PubAck of each command publish. */
  readonly publishTimeoutMs: number;
  /** Bound on each reply cache read. */
  readonly cacheTimeoutMs: number;
  /**
   * When the stream reports a publish as a duplicate, the reply goes to whoever sent
   * it first, so this client polls the reply cache at this interval instead.
   */
  readonly cachePollMs: number;
}

export interface SendOptions {
  /** How long each attempt waits for the reply. */
  readonly timeoutMs: number;
  /** Publishes at most this many times (same message id, so the stream stores it once). */
  readonly attemptsMax: number;
  /** W3C trace context to carry to the handler and back. */
  readonly traceparent?: string;
}

/** No reply arrived and none was cached: the command may or may not have run. */
export class CommandTimeout extends Error {
  override readonly name = 'CommandTimeout';
  constructor(
    readonly subject: string,
    readonly commandId: string,
    readonly attempts: number,
    readonly elapsedMs: number,
    cause?: unknown,
  ) {
    super(
      `no reply to command ${commandId} on ${subject} after ${attempts} attempts in ${elapsedMs} ms`,
      cause === undefined ? undefined : { cause },
    );
  }
}

type Waiter = (data: Uint8Array) => void;

export class JetStreamCommandClient implements CommandSender {
  private readonly js: JetStreamClient;
  private readonly inbox: string;
  private readonly waiters = new Map<string, Set<Waiter>>();
  private subscription: Subscription | undefined;
  /** The reply cache of each service this client sent to: that service's own bucket, read here, never written. */
  private readonly caches = new Map<CommandService, Promise<ReplyCache>>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: JetStreamCommandClientOptions,
  ) {
    this.js = jetstream(nc);
    // Under the connection's own inbox prefix, the only place a least-privilege user may subscribe.
    this.inbox = createInbox((nc as { options?: { inboxPrefix?: string } }).options?.inboxPrefix ?? '');
  }

  /** Subscribes the reply inbox; call once before send(). */
  async start(): Promise<this> {
    if (this.subscription) return this;
    this.subscription = this.nc.subscribe(this.inbox, {
      callback: (error, msg) => (error ? undefined : this.onReply(msg)),
    });
    await this.nc.flush();
    return this;
  }

  async send<TReply>(
    service: CommandService,
    command: string,
    commandId: string,
    payload: unknown,
    options: SendOptions,
  ): Promise<CommandReply<TReply>> {
    if (!this.subscription) throw new Error('JetStreamCommandClient.start() was not called');
    const idProblem = commandIdProblem(commandId);
    if (idProblem) throw new Error(`command id ${idProblem}`);
    if (!(options.attemptsMax >= 1) || !(options.timeoutMs > 0))
      throw new Error('attemptsMax must be >= 1 and timeoutMs > 0');
    const subject = this.options.names.commandSubject(service, command);
    const data = Buffer.from(JSON.stringify(payload ?? null));
    const hdrs = natsHeaders();
    hdrs.set(Headers.commandId, commandId);
    hdrs.set(Headers.replyTo, this.inbox);
    // The caller's trace: given, or the active span's (with tracing on, every command carries one).
    const traceparent = options.traceparent ?? activeTraceparent();
    if (traceparent) hdrs.set(Headers.traceparent, traceparent);

    const started = performance.now();
    const reply = this.expect(commandId);
    let lastError: unknown;
    try {
      for (let attempt = 1; attempt <= options.attemptsMax; attempt++) {
        let duplicate = false;
        try {
          const ack = await this.js.publish(subject, data, {
            msgID: commandId,
            headers: hdrs,
            timeout: this.options.publishTimeoutMs,
          });
          duplicate = ack.duplicate;
        } catch (error) {
          lastError = error; // the outcome is unknown; re-publishing with the same id is safe
        }
        const data2 = await this.awaitReply(reply.promise, service, commandId, options.timeoutMs, duplicate);
        if (data2) return decodeReply<TReply>(data2);
      }
    } finally {
      reply.cancel();
    }
    throw new CommandTimeout(
      subject,
      commandId,
      options.attemptsMax,
      Math.round(performance.now() - started),
      lastError,
    );
  }

  /** Waits for the inbox; polls the cache meanwhile when the reply is going elsewhere, and once at the end. */
  private async awaitReply(
    reply: Promise<Uint8Array>,
    service: CommandService,
    commandId: string,
    timeoutMs: number,
    poll: boolean,
  ): Promise<Uint8Array | undefined> {
    const deadline = performance.now() + timeoutMs;
    if (poll) {
      const cached = await this.cached(service, commandId);
      if (cached) return cached;
    }
    for (;;) {
      const left = deadline - performance.now();
      const slice = poll ? Math.min(left, this.options.cachePollMs) : left;
      const received = await withTimeout(reply, Math.max(slice, 0));
      if (received) return received;
      const cached = await this.cached(service, commandId);
      if (cached || performance.now() >= deadline) return cached;
    }
  }

  private async cached(service: CommandService, commandId: string): Promise<Uint8Array | undefined> {
    try {
      let cache = this.caches.get(service);
      if (!cache) {
        const bucket = this.options.names.commandRepliesBucket(service);
        this.caches.set(service, (cache = ReplyCache.open(this.js, bucket, this.options.cacheTimeoutMs)));
      }
      return await (await cache).get(commandId);
    } catch {
      this.caches.delete(service); // not created yet, or unreachable: the next check tries again
      return undefined;
    }
  }

  private expect(commandId: string): { promise: Promise<Uint8Array>; cancel: () => void } {
    let waiter!: Waiter;
    const promise = new Promise<Uint8Array>((resolve) => (waiter = resolve));
    let set = this.waiters.get(commandId);
    if (!set) this.waiters.set(commandId, (set = new Set()));
    set.add(waiter);
    const cancel = () => {
      const current = this.waiters.get(commandId);
      current?.delete(waiter);
      if (current?.size === 0) this.waiters.delete(commandId);
    };
    return { promise, cancel };
  }

  private onReply(msg: Msg): void {
    const commandId = msg.headers?.get(Headers.commandId);
    if (!commandId) return;
    const set = this.waiters.get(commandId);
    if (!set) return; // a late reply for a send that already gave up or was answered from the cache
    this.waiters.delete(commandId);
    for (const waiter of set) waiter(msg.data);
  }

  /** Stops listening; sends still waiting end with CommandTimeout. */
  async close(): Promise<void> {
    const subscription = this.subscription;
    this.subscription = undefined;
    if (subscription) await subscription.drain().catch(() => undefined);
  }
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
