// The budget-authority's composition: which projections, HTTP controllers, command
// handlers and background loops it runs on the shared service host.
import {
  BUDGET_COMMANDS_CONCURRENCY_MAX,
  oidcVerifierOf,
  type HostContext,
  type ServiceDefinition,
  type TallyConfig,
} from '@tally/platform-app';
import { startDirectoryOf } from './runtime/directory.js';
import type { DirectoryRuntime } from '@tally/directory-service';
import { AuthorityModule } from './authority.module.js';
import { expiryLoop, reconcileLoop } from './background/sweeps.js';
import { startCommandServers } from './messaging/command-server.js';
import { authorityOpenApi } from './openapi.js';
import { projector } from './projector.js';
import { loadAuthorityExtras } from './runtime/authority-extras.js';
import { authoritySigner, buildAuthorityRuntime, type AuthorityRuntime } from './runtime/authority-runtime.js';

/** Core handlers running at once per replica and requests waiting for one (the JetStream side's limits are the topology's). */
const COMMAND_LIMITS = {
  concurrencyMax: BUDGET_COMMANDS_CONCURRENCY_MAX,
  waitingMax: 4_096,
  drainTimeoutMs: 10_000,
};

export async function authorityService(config: TallyConfig): Promise<ServiceDefinition> {
  const extras = loadAuthorityExtras(config);
  const signer = authoritySigner(config);
  // Read before anything connects, so a bad JWKS file stops the boot at once, naming the setting.
  const oidc = oidcVerifierOf(config);
  let runtime: AuthorityRuntime | undefined;
  const runtimeOf = (ctx: HostContext) => (runtime ??= buildAuthorityRuntime(ctx, signer, extras));
  let directory: DirectoryRuntime | undefined;
  const directoryOf = () => {
    if (!directory) throw new Error('the directory starts in access(), before the HTTP module');
    return directory;
  };
  return {
    service: 'budget-authority',
    httpPort: config.authority.http_port,
    projector: { url: new URL('./projector.ts', import.meta.url).href, module: projector },
    openapi: authorityOpenApi,
    access: async (ctx) => {
      directory = await startDirectoryOf(ctx, signer, oidc);
      return directory.authenticator();
    },
    module: (ctx) => AuthorityModule.register(ctx, runtimeOf(ctx), directoryOf()),
    background: async (ctx) => {
      const { authority } = runtimeOf(ctx);
      const commands = await startCommandServers(ctx, authority, COMMAND_LIMITS);
      const stopDirectory = { name: 'directory', stop: () => directoryOf().stop() };
      return [...commands, expiryLoop(ctx, authority), reconcileLoop(ctx, authority), stopDirectory];
    },
  };
}
