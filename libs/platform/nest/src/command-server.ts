// A Nest transport strategy that serves @MessagePattern handlers from a JetStream
// work queue instead of core NATS: commands survive restarts, are redelivered until a
// handler finishes, and every replica of a service pulls from one durable consumer.
import { Server, type CustomTransportStrategy, type MessageHandler } from '@nestjs/microservices';
import { jetstream, jetstreamManager, type ConsumerMessages, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connectNats, ensureConsumer, ensureStream } from '@tally/platform-jetstream';
import type { Observable } from 'rxjs';
import { CommandProcessor } from './command-processor.js';
import { commandServerOptionProblems, durableNameFor, type JetStreamCommandServerOptions } from './options.js';
import { ReplyCache } from './reply-cache.js';
import { Slots } from './slots.js';

export type CommandServerStatus = 'connecting' | 'listening' | 'closing' | 'closed';

export class JetStreamCommandServer
  extends Server<Record<string, never>, CommandServerStatus>
  implements CustomTransportStrategy
{
  private nc: NatsConnection | undefined;
  private messages: ConsumerMessages | undefined;
  private loop: Promise<void> | undefined;
  private readonly inflight = new Set<Promise<void>>();
  private readonly slots: Slots;

  constructor(private readonly options: JetStreamCommandServerOptions) {
    super();
    const problems = commandServerOptionProblems(options);
    if (problems.length > 0) throw new Error(`invalid command server options: ${problems.join('; ')}`);
    this.slots = new Slots(options.consumer.concurrencyMax);
  }

  async listen(callback: (...optionalParams: unknown[]) => unknown): Promise<void> {
    try {
      await this.start();
      callback();
    } catch (error) {
      callback(error);
    }
  }

  private async start(): Promise<void> {
    const o = this.options;
    this._status$.next('connecting');
    const nc = isConnection(o.connection) ? o.connection : await connectNats(o.connection);
    this.nc = nc;
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    await ensureStream(jsm, o.commandsStream);
    await ensureStream(jsm, o.deadLetterStream);
    const cache = await ReplyCache.ensure(js, o.names, o.service, o.replyCache);
    const durable = durableNameFor(o.service);
    const c = o.consumer;
    await ensureConsumer(jsm, {
      stream: o.commandsStream.name,
      durable,
      filterSubject: o.names.commandWildcard(o.service),
      ackWaitMs: c.ackWaitMs,
      deliveriesMax: c.deliveriesMax + 1,
      ackPendingMax: c.ackPendingMax,
    });
    await this.logDurability(nc, jsm);
    const processor = new CommandProcessor({
      nc,
      js,
      cache,
      options: o,
      logger: this.logger,
      handlerFor: (command) => this.handlerFor(command),
      toObservable: (result) => this.transformToObservable(result) as Observable<unknown>,
    });
    const consumer = await js.consumers.get(o.commandsStream.name, durable);
    const messages = await consumer.consume({
      max_messages: c.fetchBatch,
      expires: c.pullExpiresMs,
      idle_heartbeat: c.idleHeartbeatMs,
    });
    this.messages = messages;
    this.loop = this.pump(messages, processor);
    this._status$.next('listening');
  }

  /** Pulls while a handler slot is free, so at most concurrencyMax commands run here. */
  private async pump(messages: ConsumerMessages, processor: CommandProcessor): Promise<void> {
    try {
      for await (const msg of messages) {
        await this.slots.acquire();
        const task = processor.process(msg).finally(() => {
          this.slots.release();
          this.inflight.delete(task);
        });
        this.inflight.add(task);
      }
    } catch (error) {
      this.logger.error(`command consumer for ${this.options.service} stopped: ${String(error)}`);
    }
  }

  private handlerFor(command: string): MessageHandler | null {
    // Look the name up directly: getHandlerByPattern would JSON.parse it first.
    return this.messageHandlers.get(this.normalizePattern(command)) ?? null;
  }

  private async logDurability(nc: NatsConnection, jsm: JetStreamManager): Promise<void> {
    const { config } = await jsm.streams.info(this.options.commandsStream.name);
    this.logger.log(
      `serving ${this.options.service} commands from ${config.name} (server ${nc.info?.version ?? 'unknown'}, ` +
        `replicas ${config.num_replicas}, storage ${config.storage}); acks are durable only as far as the server syncs to disk`,
    );
  }

  /** Stops pulling, lets running handlers finish (bounded), then closes an owned connection. */
  async close(): Promise<void> {
    this._status$.next('closing');
    await this.messages?.close().catch(() => undefined);
    await this.loop;
    const drained = Promise.allSettled([...this.inflight]);
    const timeout = new Promise<'timeout'>((resolve) =>
      setTimeout(() => resolve('timeout'), this.options.drainTimeoutMs).unref(),
    );
    if ((await Promise.race([drained, timeout])) === 'timeout') {
      this.logger.warn(`closing with ${this.inflight.size} commands still running; they will be redelivered`);
    }
    if (this.nc && !isConnection(this.options.connection)) await this.nc.drain().catch(() => undefined);
    this.nc = undefined;
    this._status$.next('closed');
  }

  on(): never {
    throw new Error('JetStreamCommandServer does not emit transport events; watch status instead');
  }

  unwrap<T>(): T {
    if (!this.nc) throw new Error('JetStreamCommandServer is not listening');
    return this.nc as T;
  }
}

function isConnection(value: JetStreamCommandServerOptions['connection']): value is NatsConnection {
  return typeof (value as NatsConnection).publish === 'function';
}
