// The composition shared by both services: typed config, JSON logs, NATS with verified
// streams, the projection database, projections under a lease, the HTTP API with
// health/readiness/OpenAPI and problem+json errors, the metrics port, durable command
// handlers, background loops, and a graceful shutdown on SIGTERM/SIGINT.
import { Controller, Get, Inject, Module, type DynamicModule, type INestApplication } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, NestFactory } from '@nestjs/core';
import {
  Access,
  AccessGuard,
  assertEveryRouteDeclared,
  routeTable,
  type Authenticator,
  type SubjectSignatures,
} from '@tally/platform-auth';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { CustomTransportStrategy } from '@nestjs/microservices';
import { randomUUID } from 'node:crypto';
import { Logger as PinoNestLogger, LoggerModule } from 'nestjs-pino';
import { sizeLimitsOf } from '@tally/contracts';
import { deadLettersWritten } from '@tally/platform-jetstream';
import type { DataSource } from 'typeorm';
import { QuarantineWatch, type QuarantineEntry } from '@tally/platform-typeorm';
import type { TallyConfig } from './config.schema.js';
import { HealthController, MetricsRegistry, ReadinessRegistry } from './health.js';
import { JsonLogger, requestOfLog } from './json-logger.js';
import { startMetricsServer } from './metrics-server.js';
import { startNatsRuntime, type NatsRuntime } from './nats-runtime.js';
import { problemValidationPipe, ProblemFilter } from './problem.js';
import { RefusalGate, refusalLimiterOf } from './refusal-gate.js';
import { refusalsLimited } from './refusal-limit.js';
import { deadLetterRequest } from './refused-input.js';
import { PROJECTION_HOST_LIMITS, ProjectionHost, type Projections } from './projection-host.js';
import { ProjectionThread } from './projection-thread.js';
import type { ProjectorDefinition } from './projector.js';
import {
  leaseBucketOf,
  openServiceDatabaseLocked,
  projectorLeaseKey,
  PROJECTOR_LEASE_TTL_MS,
} from './service-database.js';
import { ProjectionLease } from './projection-lease.js';
import { openSubjectSignatures } from './signature-replay.js';
import { commandServiceOf } from './topology.js';
import { QUARANTINE_REFRESH_MS, quarantineReadiness } from './quarantine-reads.js';
import { registerProjectionMetrics, type ProjectionOfStream } from './service-metrics.js';
import { httpSpans, startTracing } from './tracing.js';
import { openApiPartsOf } from './openapi-from-dtos.js';

export const HOST_CONTEXT = Symbol('HOST_CONTEXT');
export const OPENAPI_DOCUMENT = Symbol('OPENAPI_DOCUMENT');
/** The subject-signature verifier (ADR 0011), for handlers that check a proof themselves (delegation). */
export const SUBJECT_SIGNATURES = Symbol('SUBJECT_SIGNATURES');

export interface HostContext {
  readonly service: string;
  readonly instanceId: string;
  readonly config: TallyConfig;
  readonly logger: JsonLogger;
  readonly nats: NatsRuntime;
  readonly dataSource: DataSource;
  readonly metrics: MetricsRegistry;
  readonly readiness: ReadinessRegistry;
  readonly projections: Projections;
  /** The aggregates the projections have quarantined (ADR 0045): their reads answer 503. */
  readonly quarantine: QuarantineWatch;
}

export interface BackgroundTask {
  readonly name: string;
  stop(): Promise<void>;
}

export interface ServiceDefinition {
  readonly service: string;
  readonly httpPort: number;
  /** Where /metrics and the full /readyz report are served, apart from the API (ADR 0053). */
  readonly metricsPort: number;
  /** The service's tables and projections; run in a worker thread unless projections.worker_thread is false. */
  readonly projector: ProjectorDefinition;
  readonly openapi: Record<string, unknown>;
  /**
   * Who is calling: the authenticator of the access guard that every HTTP route goes
   * through. Called once, before the HTTP module is built.
   */
  readonly access: (ctx: HostContext) => Promise<Authenticator>;
  readonly module: (ctx: HostContext) => DynamicModule;
  readonly transports?: (ctx: HostContext) => Promise<CustomTransportStrategy[]>;
  readonly background?: (ctx: HostContext) => Promise<BackgroundTask[]>;
}

/** The document is generated from the mounted app on the first request for it, then kept. */
class OpenApiHolder {
  private document: Promise<Record<string, unknown>> | undefined;
  generate: (() => Promise<Record<string, unknown>>) | undefined;

  get(): Promise<Record<string, unknown>> {
    if (!this.generate) throw new Error('the OpenAPI document is generated once the app is built');
    this.document ??= this.generate();
    return this.document;
  }
}

@Controller()
class OpenApiController {
  constructor(@Inject(OPENAPI_DOCUMENT) private readonly holder: OpenApiHolder) {}

  @Get('openapi.json')
  @Access('public')
  openapi() {
    return this.holder.get();
  }
}

@Module({})
class HostModule {}

/** The routes the host adds to every service's API (health, readiness, the OpenAPI document). */
export const HOST_CONTROLLERS = [HealthController, OpenApiController] as const;

export async function runService(definition: ServiceDefinition, config: TallyConfig): Promise<void> {
  const logger = new JsonLogger(definition.service, config.log_level);
  const instanceId = `${definition.service}-${randomUUID().slice(0, 8)}`;
  // Before anything runs, so every span (and every log line's trace_id) has a provider.
  const tracing = await startTracing(config.tracing, definition.service, instanceId);
  if (tracing.enabled) logger.event('info', 'tracing on', { otlp_endpoint: config.tracing.otlp_endpoint });
  const nats = await startNatsRuntime(config, definition.service);
  logger.event(nats.durability.acks_backed_by_fsync ? 'info' : 'warn', 'NATS durability', {
    durability: nats.durability,
  });
  const dataSource = await openServiceDatabaseLocked(config, definition.projector.module.database, nats, instanceId);
  const metrics = new MetricsRegistry();
  nats.watch.registerMetrics(metrics.registry);
  metrics.registry.registerMetric(deadLettersWritten);
  metrics.registry.registerMetric(refusalsLimited);
  const readiness = new ReadinessRegistry();
  const base = { service: definition.service, instanceId, config, logger, nats, dataSource, metrics, readiness };
  const { projections, described, quarantine } = await startProjections(definition, base);
  registerProjectionMetrics(metrics.registry, nats.jsm, dataSource, described, [nats.names.deadLetterStream]);
  const ctx: HostContext = { ...base, projections, quarantine };
  readiness.add(nats.readiness);
  readiness.add({
    name: 'database',
    check: async () => (await dataSource.query('SELECT 1'), { ok: true, details: { kind: dataSource.options.type } }),
  });
  readiness.add(projections.readiness());
  readiness.add(quarantineReadiness(quarantine));

  const authenticator = await definition.access(ctx);
  const signatures = await openSubjectSignatures(config, nats, commandServiceOf(definition.service));
  const app = await createHttpApp(definition, ctx, authenticator, signatures);
  // Command handlers bring their own pipes (commandValidationPipe): the HTTP pipe and problem+json filter must not apply to them.
  for (const strategy of (await definition.transports?.(ctx)) ?? [])
    app.connectMicroservice({ strategy }, { inheritAppConfig: false });
  await app.startAllMicroservices();
  const background = (await definition.background?.(ctx)) ?? [];
  await app.listen(definition.httpPort, '0.0.0.0');
  const metricsServer = await startMetricsServer({ port: definition.metricsPort, metrics, readiness, logger });
  logger.event('info', `${definition.service} listening`, {
    http: `http://127.0.0.1:${definition.httpPort}`,
    metrics: `http://127.0.0.1:${definition.metricsPort}/metrics`,
    instance: instanceId,
  });
  onShutdown(async () => {
    logger.event('info', `${definition.service} stopping`);
    for (const task of background) await task.stop();
    await app.close();
    await metricsServer.close();
    await projections.stop();
    quarantine.stop();
    await dataSource.destroy();
    await nats.close();
    await tracing.shutdown().catch(() => undefined);
  });
}

/**
 * Starts the service's projections under the namespace's projector lease: by default in a
 * worker thread (its own event loop and connections, so building read models does not
 * slow commands), or on this thread when projections.worker_thread is false.
 */
async function startProjections(
  definition: ServiceDefinition,
  base: Omit<HostContext, 'projections' | 'quarantine'>,
): Promise<{ projections: Projections; described: ProjectionOfStream[]; quarantine: QuarantineWatch }> {
  const { config, logger, nats, dataSource, instanceId, service } = base;
  // Read before the projections start, so no read is answered from a quarantined aggregate's rows meanwhile.
  const quarantine = new QuarantineWatch(dataSource, { refreshMs: QUARANTINE_REFRESH_MS });
  await quarantine.start();
  const onQuarantined = (entry: QuarantineEntry) => quarantine.note(entry);
  const specs = definition.projector.module.specs({ config, names: nats.names, logger });
  const described = specs.map((s) => ({ name: s.projection.name, stream: s.projection.stream }));
  let projections: Projections;
  if (config.projections.worker_thread) {
    projections = new ProjectionThread({
      service,
      instanceId,
      projectorUrl: definition.projector.url,
      projections: described,
      dataSource,
      logger,
      startTimeoutMs: 60_000,
      stopTimeoutMs: 15_000,
      restartDelayMaxMs: PROJECTION_HOST_LIMITS.restartDelayMaxMs,
      waitPollMs: PROJECTION_HOST_LIMITS.waitPollMs,
      onQuarantined,
    });
  } else {
    const lease = await ProjectionLease.open({
      js: nats.js,
      bucket: leaseBucketOf(nats),
      key: projectorLeaseKey(service),
      holderId: instanceId,
      ttlMs: PROJECTOR_LEASE_TTL_MS,
      replicas: config.streams.replicas,
    });
    projections = new ProjectionHost({
      ...PROJECTION_HOST_LIMITS,
      js: nats.js,
      dataSource,
      specs,
      lease,
      logger,
      onQuarantined,
    });
  }
  await projections.start();
  return { projections, described, quarantine };
}

async function createHttpApp(
  definition: ServiceDefinition,
  ctx: HostContext,
  authenticator: Authenticator,
  signatures: SubjectSignatures,
): Promise<INestApplication> {
  const openapi = new OpenApiHolder();
  const root: DynamicModule = {
    module: HostModule,
    global: true,
    imports: [DiscoveryModule, LoggerModule.forRoot(requestLogging(ctx.logger)), definition.module(ctx)],
    controllers: [...HOST_CONTROLLERS],
    providers: [
      { provide: HOST_CONTEXT, useValue: ctx },
      { provide: ReadinessRegistry, useValue: ctx.readiness },
      { provide: MetricsRegistry, useValue: ctx.metrics },
      { provide: OPENAPI_DOCUMENT, useValue: openapi },
      { provide: SUBJECT_SIGNATURES, useValue: signatures },
    ],
    exports: [HOST_CONTEXT, ReadinessRegistry, MetricsRegistry, SUBJECT_SIGNATURES],
  };
  // rawBody: a bound capability's Content-Digest is checked against the bytes received (ADR 0011).
  const app = await NestFactory.create<NestExpressApplication>(root, {
    bufferLogs: true,
    bodyParser: false,
    rawBody: true,
  });
  // Nest's own lines go through nestjs-pino's logger (the same pino, so the same shape and redaction).
  app.useLogger(app.get(PinoNestLogger));
  app.use(httpSpans(QUIET_PATHS));
  // Before the body parser: a source or credential refused too often is answered 429 unread (ADR 0050).
  const refusals = new RefusalGate(refusalLimiterOf(ctx.config.http), QUIET_PATHS);
  app.use(refusals.middleware());
  // A body becomes (part of) one event, so it may be no larger than an event leaves room for (ADR 0016).
  app.useBodyParser('json', { limit: sizeLimitsOf(ctx.config.streams.max_msg_size_bytes).httpBodyBytesMax });
  // Every route declares who may call it; one without a declaration stops the boot here.
  assertEveryRouteDeclared(mountedRoutes(app));
  const controllers = mountedControllers(app);
  openapi.generate = async () => {
    const { generateOpenApi } = await import('./openapi-document.js');
    return generateOpenApi(app, controllers, openApiPartsOf(definition.openapi));
  };
  app.useGlobalGuards(new AccessGuard(authenticator, signatures));
  app.useGlobalPipes(problemValidationPipe());
  app.useGlobalFilters(
    new ProblemFilter(
      (rejected) => deadLetterRequest(ctx, rejected),
      (error) => ctx.logger.error(error),
      (req, status) => refusals.refuse(req, status),
    ),
  );
  return app;
}

/** Paths polled by probes: no line per call. */
const QUIET_PATHS = new Set(['/healthz', '/readyz']);

/**
 * nestjs-pino's request logging through the service's pino: one line per finished request,
 * at debug when it succeeded (the hot paths stay quiet at the default level), info for a
 * refusal (4xx), error for a failure (5xx). The request is logged as method and redacted
 * URL, never its headers.
 */
function requestLogging(logger: JsonLogger) {
  return {
    pinoHttp: {
      logger: logger.pino,
      quietReqLogger: true,
      customLogLevel: (_req: unknown, res: { statusCode: number }, error?: Error) =>
        error || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'info' : 'debug',
      autoLogging: { ignore: (req: { url?: string }) => QUIET_PATHS.has((req.url ?? '').split('?')[0]!) },
      // pino-http hands these its own serialization of the request and response (with .raw).
      serializers: {
        req: requestOfLog,
        res: (res: { raw?: { statusCode?: number } }) => ({ status: res.raw?.statusCode }),
      },
    },
  } as const;
}

/** Every HTTP route the app mounted, with its declared access. */
export function mountedRoutes(app: INestApplication) {
  return routeTable(mountedControllers(app));
}

/** Every controller class the app mounted. */
export function mountedControllers(app: INestApplication): (abstract new (...args: never[]) => object)[] {
  return app
    .get(DiscoveryService)
    .getControllers()
    .map((wrapper) => wrapper.metatype)
    .filter((type): type is NonNullable<typeof type> => typeof type === 'function') as (abstract new (
    ...args: never[]
  ) => object)[];
}

function onShutdown(stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    const timer = setTimeout(() => process.exit(1), 30_000);
    stop().then(
      () => (clearTimeout(timer), process.exit(0)),
      () => process.exit(1),
    );
    void signal;
  };
  process.once('SIGTERM', handler);
  process.once('SIGINT', handler);
}
