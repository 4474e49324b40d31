// A small real Nest microservice for the command tests: one controller whose handler
// appends an event to a real JetStream event store, served by JetStreamCommandServer (or
// CoreCommandServer, ADR 0025) against the shared nats-server, with every stream in a
// namespace of its own.
import { Controller, Inject, Module, UsePipes, type DynamicModule, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { EventRegistry, tallyNames, type TallyNames } from '@tally/contracts';
import {
  connectNats,
  ensureStream,
  JetStreamEventStore,
  kvStreamName,
  tallyStreamSpecs,
  type StreamLimits,
} from '@tally/platform-jetstream';
import { sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Length, Min, ValidateNested } from 'class-validator';
import {
  commandValidationPipe,
  CoreCommandClient,
  CoreCommandServer,
  JetStreamCommandClient,
  JetStreamCommandServer,
  type CommandContext,
  type JetStreamCommandServerOptions,
} from '../src/index.js';

export class CounterIncremented {
  @IsInt() by!: number;
  @IsString() writer!: string;
}

export class AppendMeta {
  @IsString() note!: string;
}

export class AppendCommand {
  @IsString() @Length(1, 64) account!: string;
  @IsInt() @Min(1) amount!: number;
  @IsOptional() @ValidateNested() @Type(() => AppendMeta) meta?: AppendMeta;
}

export interface AppendReply {
  readonly account: string;
  readonly sequence: number;
  readonly duplicate: boolean;
  readonly invocation: number;
  readonly instance: string;
  readonly traceparent: string | null;
}

/** What the tests observe and steer: the handler reports to it and awaits its hooks. */
export class Probe {
  readonly calls = new Map<string, number>();
  readonly handledBy: string[] = [];
  invocations = 0;
  /** Runs after the event is appended, before the handler returns. */
  afterAppend: ((commandId: string, call: number) => Promise<void>) | undefined;
  delayMs = 0;

  constructor(
    readonly store: JetStreamEventStore,
    readonly names: TallyNames,
  ) {}

  callsOf(commandId: string): number {
    return this.calls.get(commandId) ?? 0;
  }
}

const PROBE = Symbol('probe');
const INSTANCE = Symbol('instance');

@Controller()
class LedgerController {
  constructor(
    @Inject(PROBE) private readonly probe: Probe,
    @Inject(INSTANCE) private readonly instance: string,
  ) {}

  @MessagePattern('append')
  @UsePipes(commandValidationPipe())
  async append(@Payload() command: AppendCommand, @Ctx() ctx: CommandContext): Promise<AppendReply> {
    const p = this.probe;
    const commandId = ctx.getCommandId();
    const call = p.callsOf(commandId) + 1;
    p.calls.set(commandId, call);
    p.handledBy.push(this.instance);
    const invocation = ++p.invocations;
    if (p.delayMs > 0) await new Promise((r) => setTimeout(r, p.delayMs));
    if (command.account === 'closed') throw new RpcException({ type: 'account_closed', message: 'account is closed' });
    if (command.account === 'doomed') throw new Error('the ledger is on fire');
    const subject = p.names.workEventSubject(command.account);
    // The event id derives from the command id: a rerun of the same command appends nothing new.
    const event = {
      eventId: `evt-${commandId}`,
      type: 'CounterIncremented',
      aggregateId: command.account,
      occurredAt: '2026-01-01T00:00:00.000Z',
      payload: { by: command.amount, writer: this.instance },
    };
    const result = await p.store.append(subject, [event], await p.store.lastSequence(subject));
    await p.afterAppend?.(commandId, call);
    return {
      account: command.account,
      sequence: result.sequences[0]!,
      duplicate: result.duplicates[0]!,
      invocation,
      instance: this.instance,
      traceparent: ctx.getTraceparent() ?? null,
    };
  }

  @MessagePattern('ping')
  ping(@Ctx() ctx: CommandContext): { pong: string } {
    return { pong: ctx.getCommandId() };
  }
}

@Module({})
class LedgerModule {
  static register(probe: Probe, instance: string): DynamicModule {
    return {
      module: LedgerModule,
      controllers: [LedgerController],
      providers: [
        { provide: PROBE, useValue: probe },
        { provide: INSTANCE, useValue: instance },
      ],
    };
  }
}

export const streamLimits: StreamLimits = {
  storage: 'file',
  replicas: 1,
  duplicateWindowMs: 120_000,
  maxMsgSizeBytes: 1024 * 1024,
  eventMaxBytes: 256 * 1024 * 1024,
  queueMaxBytes: 256 * 1024 * 1024,
  deadLetterMaxBytes: 256 * 1024 * 1024,
  deadLetterMaxAgeMs: 86_400_000,
};

export interface HarnessOptions {
  readonly commandsDuplicateWindowMs?: number;
  readonly consumer?: Partial<JetStreamCommandServerOptions['consumer']>;
}

export class Harness {
  readonly apps: INestMicroservice[] = [];
  private readonly connections: NatsConnection[] = [];
  readonly clients: JetStreamCommandClient[] = [];

  private constructor(
    readonly names: TallyNames,
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    readonly store: JetStreamEventStore,
    readonly probe: Probe,
    private readonly options: HarnessOptions,
  ) {}

  static async create(prefix: string, options: HarnessOptions = {}): Promise<Harness> {
    const names = tallyNames(uniqueNamespace(prefix));
    const nc = await connect(`test-${names.namespace}`);
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const events = tallyStreamSpecs(names, streamLimits).find((s) => s.name === names.workEventsStream)!;
    await ensureStream(jsm, events);
    const registry = new EventRegistry([{ type: 'CounterIncremented', version: 1, payload: CounterIncremented }]);
    const store = new JetStreamEventStore(js, jsm, {
      stream: names.workEventsStream,
      registry,
      publishTimeoutMs: 5000,
      loadEventsMax: 100_000,
      loadIdleTimeoutMs: 5000,
    });
    return new Harness(names, nc, js, jsm, store, new Probe(store, names), options);
  }

  serverOptions(connection: NatsConnection): JetStreamCommandServerOptions {
    const specs = tallyStreamSpecs(this.names, streamLimits);
    const commands = specs.find((s) => s.name === this.names.commandsStream)!;
    return {
      connection,
      names: this.names,
      service: 'work',
      commandsStream: {
        ...commands,
        duplicateWindowMs: this.options.commandsDuplicateWindowMs ?? streamLimits.duplicateWindowMs,
      },
      deadLetterStream: specs.find((s) => s.name === this.names.deadLetterStream)!,
      replyCache: { ttlMs: 600_000, replicas: 1, maxBytes: 64 * 1024 * 1024, maxValueSizeBytes: 64 * 1024 },
      consumer: {
        ackWaitMs: 2000,
        deliveriesMax: 4,
        ackPendingMax: 512,
        fetchBatch: 64,
        concurrencyMax: 64,
        pullExpiresMs: 5000,
        idleHeartbeatMs: 2000,
        workingIntervalMs: 500,
        ...this.options.consumer,
      },
      retry: { backoffBaseMs: 50, backoffMaxMs: 400 },
      publishTimeoutMs: 5000,
      drainTimeoutMs: 5000,
    };
  }

  /** Starts one replica of the service on a connection of its own (returned, so a test can cut it). */
  async startServer(instance: string, probe = this.probe): Promise<{ app: INestMicroservice; nc: NatsConnection }> {
    const nc = await connect(`server-${instance}-${this.names.namespace}`);
    this.connections.push(nc);
    const app = await NestFactory.createMicroservice(LedgerModule.register(probe, instance), {
      strategy: new JetStreamCommandServer(this.serverOptions(nc)),
      logger: ['error'],
    });
    await app.listen();
    this.apps.push(app);
    return { app, nc };
  }

  /** Starts one replica serving core NATS requests in the service's queue group (ADR 0025). */
  async startCoreServer(
    instance: string,
    limits: { concurrencyMax?: number; waitingMax?: number } = {},
  ): Promise<{ app: INestMicroservice; nc: NatsConnection }> {
    const nc = await connect(`core-${instance}-${this.names.namespace}`);
    this.connections.push(nc);
    const strategy = new CoreCommandServer({
      connection: nc,
      names: this.names,
      service: 'work',
      deadLetterStream: this.serverOptions(nc).deadLetterStream,
      concurrencyMax: limits.concurrencyMax ?? 64,
      waitingMax: limits.waitingMax ?? 1024,
      publishTimeoutMs: 5000,
      drainTimeoutMs: 5000,
    });
    const app = await NestFactory.createMicroservice(LedgerModule.register(this.probe, instance), {
      strategy,
      logger: ['error'],
    });
    await app.listen();
    this.apps.push(app);
    return { app, nc };
  }

  coreClient(retryDelayMs = 50): CoreCommandClient {
    return new CoreCommandClient(this.nc, { names: this.names, retryDelayMs });
  }

  async client(): Promise<JetStreamCommandClient> {
    const client = await new JetStreamCommandClient(this.nc, {
      names: this.names,
      publishTimeoutMs: 5000,
      cacheTimeoutMs: 2000,
      cachePollMs: 50,
    }).start();
    this.clients.push(client);
    return client;
  }

  async messagesIn(stream: string): Promise<number> {
    return (await this.jsm.streams.info(stream)).state.messages;
  }

  /** Every record in the dead-letter stream, decoded. */
  async deadLetters(): Promise<Record<string, unknown>[]> {
    const info = await this.jsm.streams.info(this.names.deadLetterStream);
    const out: Record<string, unknown>[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const msg = await this.jsm.streams.getMessage(this.names.deadLetterStream, { seq });
      if (msg) out.push(msg.json<Record<string, unknown>>());
    }
    return out;
  }

  async dispose(): Promise<void> {
    for (const client of this.clients) await client.close();
    for (const app of this.apps) await app.close().catch(() => undefined);
    for (const nc of this.connections) if (!nc.isClosed()) await nc.drain().catch(() => undefined);
    const n = this.names;
    for (const stream of [
      n.commandsStream,
      n.deadLetterStream,
      n.workEventsStream,
      kvStreamName(n.commandRepliesBucket('budget')),
      kvStreamName(n.commandRepliesBucket('work')),
    ]) {
      await this.jsm.streams.delete(stream).catch(() => undefined);
    }
    await this.nc.drain();
  }
}

function connect(name: string): Promise<NatsConnection> {
  return connectNats({
    url: sharedNatsUrl(),
    name,
    connectTimeoutMs: 5000,
    maxReconnectAttempts: -1,
    reconnectTimeWaitMs: 100,
  });
}

export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

export async function eventually<T>(
  read: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
}
