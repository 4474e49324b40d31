// The agent-orchestrator's composition: projections, HTTP controllers, the submission
// subject and the dispatch workers, on the shared service host.
import { Module, type DynamicModule } from '@nestjs/common';
import type { CustomTransportStrategy } from '@nestjs/microservices';
import { workEventRegistry, type BudgetPort } from '@tally/orchestrator-application';
import { DEFAULT_GATEWAY_OPTIONS, ProviderRegistry } from '@tally/orchestrator-providers';
import { WORK_PROJECTION_ENTITIES, WORK_PROJECTION_MIGRATIONS, workUnitsProjection, type WorkUnitDeriver } from '@tally/orchestrator-projections';
import { streamLimitsOf, type BackgroundTask, type HostContext, type ServiceDefinition, type TallyConfig } from '@tally/platform-app';
import { tallyStreamSpecs } from '@tally/platform-jetstream';
import { JetStreamCommandClient, JetStreamCommandServer } from '@tally/platform-nest';
import { JetStreamBudgetPort } from './budget/jetstream-budget.port.js';
import { UnmeteredBudgetPort } from './budget/unmetered-budget.port.js';
import { startDispatchWorkers } from './dispatch/dispatch-workers.js';
import { SessionsController } from './http/sessions.controller.js';
import { WorkController } from './http/work.controller.js';
import { WorkCommandsController } from './messaging/work-commands.controller.js';
import { orchestratorOpenApi } from './openapi.js';
import { buildRuntime, type OrchestratorRuntime } from './orchestrator.runtime.js';
import { workUnitDeriver } from './projections/work-unit.deriver.js';
import { WorkReads } from './work/work-reads.js';
import { WorkSubmission } from './work/work-submission.js';

@Module({})
class OrchestratorModule {}

/** Reply-cache limits; the authority opens the same bucket, so both must derive them alike (ADR 0003). */
export function replyCacheLimitsOf(config: TallyConfig) {
  return { ttlMs: Math.max(600_000, config.streams.duplicate_window_ms), replicas: config.streams.replicas, maxBytes: config.streams.max_bytes };
}

export async function orchestratorService(config: TallyConfig): Promise<ServiceDefinition> {
  let runtime: OrchestratorRuntime | undefined;
  const runtimeOf = (ctx: HostContext) => (runtime ??= buildRuntime(ctx));
  return {
    service: 'agent-orchestrator',
    httpPort: config.orchestrator.http_port,
    database: { entities: WORK_PROJECTION_ENTITIES, migrations: WORK_PROJECTION_MIGRATIONS },
    projections: (ctx) => [
      {
        projection: workUnitsProjection({ stream: ctx.nats.names.workEventsStream, filterSubject: ctx.nats.names.workEventsWildcard, deriver: workUnitDeriver as WorkUnitDeriver<unknown> }),
        registry: workEventRegistry(),
      },
    ],
    openapi: orchestratorOpenApi,
    module: (ctx): DynamicModule => {
      const rt = runtimeOf(ctx);
      return {
        module: OrchestratorModule,
        controllers: [WorkController, SessionsController, WorkCommandsController],
        providers: [
          { provide: WorkSubmission, useValue: new WorkSubmission(rt) },
          { provide: WorkReads, useValue: new WorkReads(rt) },
        ],
      };
    },
    transports: async (ctx) => [submissionServer(ctx)],
    background: async (ctx) => startWorkers(runtimeOf(ctx)),
  };
}

function submissionServer(ctx: HostContext): CustomTransportStrategy {
  const { config, nats } = ctx;
  const specs = tallyStreamSpecs(nats.names, streamLimitsOf(config));
  const c = config.consumers;
  const concurrencyMax = 64;
  return new JetStreamCommandServer({
    connection: nats.nc,
    names: nats.names,
    service: 'work',
    commandsStream: specs.find((s) => s.name === nats.names.commandsStream)!,
    deadLetterStream: specs.find((s) => s.name === nats.names.deadLetterStream)!,
    replyCache: replyCacheLimitsOf(config),
    consumer: {
      ackWaitMs: c.ack_wait_ms,
      deliveriesMax: Math.max(2, c.deliveries_max),
      ackPendingMax: Math.max(c.ack_pending_max, concurrencyMax),
      fetchBatch: Math.min(c.fetch_batch, concurrencyMax),
      concurrencyMax,
      pullExpiresMs: 30_000,
      idleHeartbeatMs: 5_000,
      workingIntervalMs: c.working_interval_ms,
    },
    retry: { backoffBaseMs: 250, backoffMaxMs: Math.max(250, c.nak_delay_max_ms) },
    publishTimeoutMs: config.nats.publish_timeout_ms,
    drainTimeoutMs: 10_000,
  });
}

async function startWorkers(rt: OrchestratorRuntime): Promise<BackgroundTask[]> {
  const { config, logger, nats, readiness } = rt.ctx;
  const mode = config.orchestrator.budget_mode;
  readiness.add({ name: 'budget', check: async () => ({ ok: true, details: { mode, workers: config.orchestrator.run_workers } }) });
  if (!config.orchestrator.run_workers) {
    logger.event('info', 'dispatch workers disabled (orchestrator.run_workers=false): this replica serves the API only');
    return [];
  }
  const gateway = new ProviderRegistry(config.providers, { ...DEFAULT_GATEWAY_OPTIONS, env: process.env });
  let budget: BudgetPort;
  let client: JetStreamCommandClient | undefined;
  if (mode === 'unmetered') {
    logger.event('warn', 'UNMETERED budget mode: paid dispatches are NOT admitted or settled by the budget authority. Use only for benchmarks and local experiments; receipts say metered=false (docs/adr/0005).', { budget_mode: mode });
    budget = new UnmeteredBudgetPort();
  } else {
    client = await new JetStreamCommandClient(nats.nc, { names: nats.names, publishTimeoutMs: config.nats.publish_timeout_ms, cacheTimeoutMs: 2_000, cachePollMs: 50 }).start();
    budget = new JetStreamBudgetPort(client, { replyTimeoutMs: config.orchestrator.budget_timeout_ms, attemptsMax: 3 });
  }
  const workers = await startDispatchWorkers(rt, { gateway, prices: gateway, budget });
  return [
    {
      name: 'dispatch-workers',
      async stop() {
        await workers.stop();
        await client?.close();
        gateway.close();
      },
    },
  ];
}
