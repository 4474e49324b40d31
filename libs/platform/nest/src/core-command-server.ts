// A Nest transport strategy that serves @MessagePattern handlers as core NATS
// request/reply (ADR 0025): every replica of a service joins one queue group on
// `<ns>.req.<service>.*`, so each request reaches one replica, and the reply goes straight
// back to the caller. Nothing is stored on the way: the handler is idempotent on the
// ledger (a re-sent command id gets the answer its events recorded), so a lost request or
// reply costs the caller one re-send with the same command id, and a timeout stays an
// unknown outcome on the caller's side (fail closed). Bad input is still answered field by
// field and dead-lettered; anything else that goes wrong is answered `unavailable`.
import { Server, type CustomTransportStrategy, type MessageHandler } from '@nestjs/microservices';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { headers as natsHeaders, type Msg, type NatsConnection, type Subscription } from '@nats-io/nats-core';
import { Headers, type CommandService, type FieldError, type TallyNames } from '@tally/contracts';
import {
  connectNats,
  ensureStream,
  publishDeadLetter,
  type DeadLetter,
  type NatsConnectionOptions,
  type StreamSpec,
} from '@tally/platform-jetstream';
import { lastValueFrom, type Observable } from 'rxjs';
import { CoreCommandContext } from './command-context.js';
import { classify, describe, type Outcome } from './command-processor.js';
import { deadLetterSourceFor } from './options.js';
import { Slots } from './slots.js';
import { commandIdProblem, encodeReply, validationError, type CommandReply } from './wire.js';

export interface CoreCommandServerOptions {
  /** An open connection (not closed by the server) or how to open one (closed on close()). */
  readonly connection: NatsConnection | NatsConnectionOptions;
  readonly names: TallyNames;
  readonly service: CommandService;
  readonly deadLetterStream: StreamSpec;
  /** Handlers running at once in this replica. */
  readonly concurrencyMax: number;
  /** Requests waiting for a handler slot; one more is answered `unavailable` at once (load shedding). */
  readonly waitingMax: number;
  /** Bound on each dead-letter publish. */
  readonly publishTimeoutMs: number;
  /** close() waits this long for running handlers before it gives up on them. */
  readonly drainTimeoutMs: number;
}

export type CoreCommandServerStatus = 'connecting' | 'listening' | 'closing' | 'closed';

export class CoreCommandServer
  extends Server<Record<string, never>, CoreCommandServerStatus>
  implements CustomTransportStrategy
{
  private nc: NatsConnection | undefined;
  private js: JetStreamClient | undefined;
  private subscription: Subscription | undefined;
  private readonly inflight = new Set<Promise<void>>();
  private readonly slots: Slots;
  private waiting = 0;
  private closing = false;

  constructor(private readonly options: CoreCommandServerOptions) {
    super();
    for (const [name, value] of Object.entries({
      concurrencyMax: options.concurrencyMax,
      waitingMax: options.waitingMax,
      publishTimeoutMs: options.publishTimeoutMs,
      drainTimeoutMs: options.drainTimeoutMs,
    }))
      if (!(Number.isFinite(value) && value >= 1)) throw new Error(`invalid core command server options: ${name}`);
    if (options.deadLetterStream.name !== options.names.deadLetterStream)
      throw new Error(
        `invalid core command server options: deadLetterStream.name must be ${options.names.deadLetterStream}`,
      );
    this.slots = new Slots(options.concurrencyMax);
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
    this.js = jetstream(nc);
    await ensureStream(await jetstreamManager(nc), o.deadLetterStream);
    const subject = o.names.requestWildcard(o.service);
    this.subscription = nc.subscribe(subject, {
      queue: o.names.requestQueueGroup(o.service),
      callback: (error, msg) => (error ? undefined : this.admitRequest(msg)),
    });
    await nc.flush();
    this.logger.log(
      `serving ${o.service} requests on ${subject} (queue group ${o.names.requestQueueGroup(o.service)}, server ${nc.info?.version ?? 'unknown'})`,
    );
    this._status$.next('listening');
  }

  /** Bounds the work of this replica: a request beyond the waiting bound is shed, not queued without limit. */
  private admitRequest(msg: Msg): void {
    if (this.closing) return; // no answer: the caller's re-send reaches a replica that is not closing
    if (this.waiting >= this.options.waitingMax) {
      this.respond(msg, headerOf(msg, Headers.commandId) ?? '', unavailable('this replica is at its request bound'));
      return;
    }
    this.waiting++;
    const task = this.slots
      .acquire()
      .then(() => {
        this.waiting--;
        return this.process(msg).finally(() => this.slots.release());
      })
      .finally(() => this.inflight.delete(task));
    this.inflight.add(task);
  }

  private async process(msg: Msg): Promise<void> {
    const commandId = headerOf(msg, Headers.commandId) ?? '';
    try {
      const outcome = await this.run(msg, commandId);
      if (outcome.kind === 'answered') return this.respond(msg, commandId, outcome.reply);
      if (outcome.kind === 'retry') {
        this.logger.warn?.(`${this.options.service} request ${commandId} on ${msg.subject}: ${outcome.detail}`);
        return this.respond(msg, commandId, unavailable('the command could not be handled now; re-send it'));
      }
      // A refusal is only answered once it is in the dead-letter stream: nothing bad is lost.
      await this.deadLetter(msg, commandId, outcome.reason, outcome.detail, outcome.errors);
      this.respond(msg, commandId, outcome.reply);
    } catch (error) {
      this.logger.warn?.(`${this.options.service} request ${commandId} on ${msg.subject}: ${describe(error)}`);
      this.respond(msg, commandId, unavailable('the command could not be handled now; re-send it'));
    }
  }

  private async run(msg: Msg, commandId: string): Promise<Outcome> {
    const idProblem = commandIdProblem(commandId || undefined);
    if (idProblem)
      return refused('decode_failed', 'command has no usable command id', `headers.${Headers.commandId}`, idProblem);
    if (!msg.reply) return refused('decode_failed', 'request has no reply subject', '$', 'a command must be a request');
    let payload: unknown;
    try {
      payload = JSON.parse(Buffer.from(msg.data).toString('utf8'));
    } catch (error) {
      return refused('decode_failed', 'command body is not JSON', '$', `malformed JSON: ${(error as Error).message}`);
    }
    const command = msg.subject.slice(msg.subject.lastIndexOf('.') + 1);
    // Answered `unavailable` rather than refused: during a rolling upgrade another replica may know it.
    const handler = this.handlerFor(command);
    if (!handler) return { kind: 'retry', detail: `no @MessagePattern('${command}') handler` };
    try {
      const traceparent = headerOf(msg, Headers.traceparent);
      const result = await handler(payload, new CoreCommandContext([msg, commandId, traceparent]));
      const value = await lastValueFrom(this.transformToObservable(result) as Observable<unknown>, {
        defaultValue: null,
      });
      return { kind: 'answered', reply: { ok: true, value: value === undefined ? null : value } };
    } catch (error) {
      return classify(error);
    }
  }

  private handlerFor(command: string): MessageHandler | null {
    return this.messageHandlers.get(this.normalizePattern(command)) ?? null;
  }

  private async deadLetter(
    msg: Msg,
    commandId: string,
    reason: DeadLetter['reason'],
    detail: string,
    errors: readonly FieldError[],
  ): Promise<void> {
    await publishDeadLetter(
      this.js!,
      this.options.names,
      {
        source: deadLetterSourceFor(this.options.service),
        reason,
        detail,
        errors,
        originalSubject: msg.subject,
        ...(commandIdProblem(commandId || undefined) ? {} : { dedupeKey: commandId }),
        data: msg.data,
        ...(msg.headers ? { headers: msg.headers } : {}),
      },
      this.options.publishTimeoutMs,
      this.options.deadLetterStream.maxMsgSizeBytes,
    );
    this.logger.warn?.(`command ${commandId || '(no id)'} on ${msg.subject} dead-lettered: ${reason}: ${detail}`);
  }

  private respond(msg: Msg, commandId: string, reply: CommandReply<unknown>): void {
    if (!msg.reply) return;
    const hdrs = natsHeaders();
    if (commandId) hdrs.set(Headers.commandId, commandId);
    const traceparent = headerOf(msg, Headers.traceparent);
    if (traceparent) hdrs.set(Headers.traceparent, traceparent);
    try {
      msg.respond(encodeReply(reply), { headers: hdrs });
    } catch (error) {
      // The connection is gone: the caller times out and re-sends, which the ledger answers.
      this.logger.warn?.(`could not answer ${this.options.service} request ${commandId}: ${describe(error)}`);
    }
  }

  /** Stops taking requests, lets running handlers finish (bounded), then closes an owned connection. */
  async close(): Promise<void> {
    this._status$.next('closing');
    this.closing = true;
    await this.subscription?.drain().catch(() => undefined);
    const drained = Promise.allSettled([...this.inflight]);
    const timeout = new Promise<'timeout'>((resolve) =>
      setTimeout(() => resolve('timeout'), this.options.drainTimeoutMs).unref(),
    );
    if ((await Promise.race([drained, timeout])) === 'timeout')
      this.logger.warn(`closing with ${this.inflight.size} requests still running; their callers will re-send`);
    if (this.nc && !isConnection(this.options.connection)) await this.nc.drain().catch(() => undefined);
    this.nc = undefined;
    this._status$.next('closed');
  }

  on(): never {
    throw new Error('CoreCommandServer does not emit transport events; watch status instead');
  }

  unwrap<T>(): T {
    if (!this.nc) throw new Error('CoreCommandServer is not listening');
    return this.nc as T;
  }
}

function refused(reason: DeadLetter['reason'], detail: string, field: string, message: string): Outcome {
  const errors = [{ field, message }];
  return { kind: 'refused', reason, detail, errors, reply: { ok: false, error: validationError(errors) } };
}

function unavailable(message: string): CommandReply<unknown> {
  return { ok: false, error: { type: 'unavailable', message } };
}

function headerOf(msg: Msg, name: string): string | undefined {
  return msg.headers?.get(name) || undefined;
}

function isConnection(value: CoreCommandServerOptions['connection']): value is NatsConnection {
  return typeof (value as NatsConnection).publish === 'function';
}
