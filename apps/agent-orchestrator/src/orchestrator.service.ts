// The agent-orchestrator's composition: projections, HTTP controllers, the submission
// subject and the dispatch workers, on the shared service host.
import { Module, type DynamicModule } from '@nestjs/common';
import type { BudgetPort } from '@tally/orchestrator-application';
import { DEFAULT_GATEWAY_OPTIONS, ProviderRegistry } from '@tally/orchestrator-providers';
import { projector } from './projector.js';
import {
  oidcVerifierOf,
  moduleUrl,
  type BackgroundTask,
  type HostContext,
  type ServiceDefinition,
  type TallyConfig,
} from '@tally/platform-app';
import type { OidcVerifier } from '@tally/platform-auth';
import { CoreCommandClient, JetStreamCommandClient, type CommandSender } from '@tally/platform-nest';
import { JetStreamBudgetPort } from './budget/jetstream-budget.port.js';
import { UnmeteredBudgetPort } from './budget/unmetered-budget.port.js';
import { startDispatchWorkers } from './dispatch/dispatch-workers.js';
import { ConfiguredPromptProfiles, promptProfilesOf } from './dispatch/prompt-profiles.js';
import { SessionsController } from './http/sessions.controller.js';
import { WorkController } from './http/work.controller.js';
import { WorkTimelineController } from './http/work-timeline.controller.js';
import { WorkTimeline } from './work/work-timeline.js';
import { startSubmissionServer } from './messaging/submission-server.js';
import { orchestratorOpenApi } from './openapi.js';
import { buildRuntime, type OrchestratorRuntime } from './orchestrator.runtime.js';
import { startQueuedSweeper } from './work/queued-sweeper.js';
import { WorkReads } from './work/work-reads.js';
import { WorkSubmission } from './work/work-submission.js';
import { CAPABILITY_TOKENS } from './http/work-scope.js';
import { ChatCompletionsController, MessagesController } from './gateway/drop-in.controllers.js';
import { DropInGateway } from './gateway/drop-in-gateway.js';
import { ModelCatalog } from './gateway/model-catalog.js';
import { RejectedDropIn } from './gateway/rejected-drop-in.js';
import { CapabilityGrants } from './mcp/capability-grants.js';
import { McpController } from './mcp/mcp.controller.js';
import { McpSessions } from './mcp/mcp-sessions.js';
import { ToolAwareGateway } from './mcp/tool-aware-gateway.js';
import { ToolCalls } from './mcp/tool-calls.js';
import { ToolServers } from './mcp/tool-servers.js';
import { startDirectory, type DirectoryRuntime } from '@tally/directory-service';
import { AdmissionProofVerifier, type KnownKeys } from './budget/admission-proofs.js';

/** Pause before re-sending an Admit or Settle that no authority replica took (one may be restarting). */
const BUDGET_RETRY_DELAY_MS = 250;

@Module({})
class OrchestratorModule {}

/** Every controller the orchestrator mounts: the access-table and OpenAPI tests enumerate their routes. */
export const ORCHESTRATOR_CONTROLLERS = [
  WorkController,
  WorkTimelineController,
  SessionsController,
  ChatCompletionsController,
  MessagesController,
  McpController,
] as const;

export async function orchestratorService(config: TallyConfig): Promise<ServiceDefinition> {
  let runtime: OrchestratorRuntime | undefined;
  const runtimeOf = (ctx: HostContext) => (runtime ??= buildRuntime(ctx));
  let directory: DirectoryRuntime | undefined;
  // Read before anything connects, so a bad JWKS file stops the boot at once, naming the setting.
  const oidc = oidcVerifierOf(config);
  let tools: ToolServers | undefined;
  let mcpSessions: McpSessions | undefined;
  const mcpSessionsOf = (ctx: HostContext) => (mcpSessions ??= startMcpSessions(ctx, directory!));
  const toolServersOf = () =>
    (tools ??= new ToolServers(
      config.tool_servers,
      process.env,
      config.providers.map((p) => p.name),
    ));
  return {
    service: 'agent-orchestrator',
    httpPort: config.orchestrator.http_port,
    metricsPort: config.orchestrator.metrics_port,
    projector: { url: moduleUrl('./projector', import.meta.url).href, module: projector },
    openapi: orchestratorOpenApi,
    access: async (ctx) => {
      directory = await startOrchestratorDirectory(ctx, oidc);
      return directory.authenticator();
    },
    module: (ctx): DynamicModule => {
      const rt = runtimeOf(ctx);
      const submission = new WorkSubmission(rt);
      const catalog = new ModelCatalog(ctx.config.providers);
      return {
        module: OrchestratorModule,
        controllers: [...ORCHESTRATOR_CONTROLLERS],
        providers: [
          { provide: WorkSubmission, useValue: submission },
          { provide: ModelCatalog, useValue: catalog },
          {
            provide: DropInGateway,
            useValue: new DropInGateway(rt, submission, catalog, new ConfiguredPromptProfiles(ctx.config.providers)),
          },
          { provide: RejectedDropIn, useValue: new RejectedDropIn(ctx) },
          { provide: ToolServers, useValue: toolServersOf() },
          { provide: ToolCalls, useValue: new ToolCalls(rt, submission, toolServersOf()) },
          { provide: CapabilityGrants, useValue: new CapabilityGrants(ctx) },
          { provide: McpSessions, useValue: mcpSessionsOf(ctx) },
          {
            provide: WorkReads,
            useValue: new WorkReads(rt, { readWaitMs: ctx.config.orchestrator.read_wait_ms }, ctx.quarantine),
          },
          { provide: WorkTimeline, useValue: new WorkTimeline(rt) },
          { provide: CAPABILITY_TOKENS, useValue: directory!.capabilityTokens },
        ],
      };
    },
    background: async (ctx) => {
      const rt = runtimeOf(ctx);
      // Tasks stop in list order: the submission subject stops taking work before the workers drain.
      const workers = await startWorkers(rt, toolServersOf(), directory!.keys);
      const o = ctx.config.orchestrator;
      const sweeper = startQueuedSweeper(rt, {
        intervalMs: o.queued_sweep_interval_ms,
        graceMs: o.queued_grace_ms,
        batchMax: o.queued_sweep_batch_max,
        publishTimeoutMs: ctx.config.nats.publish_timeout_ms,
      });
      const stopDirectory = { name: 'directory', stop: async () => directory?.stop() };
      const stopSessions = { name: 'mcp-sessions', stop: async () => mcpSessions?.stop() };
      return [
        stopSessions,
        await startSubmissionServer(rt, directory!.capabilityTokens),
        sweeper,
        ...workers,
        stopDirectory,
      ];
    },
  };
}

/** The orchestrator reads the directory (keys, tenants, signing keys) and never writes it. */
function startOrchestratorDirectory(ctx: HostContext, oidc: OidcVerifier | undefined): Promise<DirectoryRuntime> {
  return startDirectory({
    js: ctx.nats.js,
    jsm: ctx.nats.jsm,
    names: ctx.nats.names,
    publishTimeoutMs: ctx.config.nats.publish_timeout_ms,
    adminKey: ctx.config.auth.admin_key,
    oidc,
    staleAfterMs: ctx.config.auth.directory_stale_after_ms,
    freshnessCheckMs: ctx.config.auth.directory_freshness_check_ms,
    keysPerTenantMax: ctx.config.auth.keys_per_tenant_max,
    nowMs: () => Date.now(),
    onError: (error) => ctx.logger.error(error),
  });
}

/** The MCP sessions' quotas and ends (ADR 0054), told of revocations by the directory's view. */
function startMcpSessions(ctx: HostContext, directory: DirectoryRuntime): McpSessions {
  const o = ctx.config.orchestrator;
  const sessions = new McpSessions({
    limits: {
      sessionsMax: o.mcp_sessions_max,
      perCapabilityMax: o.mcp_sessions_per_capability_max,
      perTenantMax: o.mcp_sessions_per_tenant_max,
      idleMs: o.mcp_session_idle_ms,
    },
    nowMs: () => Date.now(),
    registry: ctx.metrics.registry,
    isRevoked: (id) => directory.revocations.isRevoked(id),
    onRevoked: (listener) => directory.revocations.onRevoked(listener),
    parentOf: (token) => directory.capabilityTokens.claimsOf(token)?.parent_id,
    onError: (error) => ctx.logger.error(error),
  });
  sessions.start();
  return sessions;
}

async function startWorkers(
  rt: OrchestratorRuntime,
  toolServers: ToolServers,
  keys: KnownKeys,
): Promise<BackgroundTask[]> {
  const { config, logger, nats, readiness } = rt.ctx;
  const mode = config.orchestrator.budget_mode;
  readiness.add({
    name: 'budget',
    check: async () => ({ ok: true, details: { mode, workers: config.orchestrator.run_workers } }),
  });
  if (!config.orchestrator.run_workers) {
    logger.event(
      'info',
      'dispatch workers disabled (orchestrator.run_workers=false): this replica serves the API only',
    );
    return [];
  }
  const gateway = new ProviderRegistry(config.providers, { ...DEFAULT_GATEWAY_OPTIONS, env: process.env });
  let budget: BudgetPort;
  let client: CommandSender | undefined;
  if (mode === 'unmetered') {
    logger.event(
      'warn',
      'UNMETERED budget mode: paid dispatches are NOT admitted or settled by the budget authority. Use only for benchmarks and local experiments; receipts say metered=false (docs/adr/0005).',
      { budget_mode: mode },
    );
    budget = new UnmeteredBudgetPort();
  } else {
    client =
      config.nats.budget_commands === 'jetstream'
        ? await new JetStreamCommandClient(nats.nc, {
            names: nats.names,
            publishTimeoutMs: config.nats.publish_timeout_ms,
            cacheTimeoutMs: 2_000,
            cachePollMs: 50,
          }).start()
        : new CoreCommandClient(nats.nc, { names: nats.names, retryDelayMs: BUDGET_RETRY_DELAY_MS });
    const proofs = new AdmissionProofVerifier(keys, {
      ...(config.orchestrator.authority_url === undefined ? {} : { authorityUrl: config.orchestrator.authority_url }),
      cooldownMs: config.orchestrator.authority_keys_cooldown_ms,
      timeoutMs: config.orchestrator.budget_timeout_ms,
      nowMs: () => Date.now(),
    });
    const options = { replyTimeoutMs: config.orchestrator.budget_timeout_ms, attemptsMax: 3 };
    budget = new JetStreamBudgetPort(client, options, proofs);
  }
  const tools = new ToolAwareGateway(gateway, toolServers);
  const prompts = await promptProfilesOf(config);
  const workers = await startDispatchWorkers(rt, { gateway: tools, prices: tools, prompts, budget });
  return [
    {
      name: 'dispatch-workers',
      async stop() {
        await workers.stop();
        await client?.close();
        gateway.close();
        await toolServers.close();
      },
    },
  ];
}
