// The budget-authority's composition: which projections, HTTP controllers, command
// handlers and background loops it runs on the shared service host.
import { oidcVerifierOf, type HostContext, type ServiceDefinition, type TallyConfig } from '@tally/platform-app';
import { startDirectoryOf } from './runtime/directory.js';
import type { DirectoryRuntime } from '@tally/directory-service';
import { AuthorityModule } from './authority.module.js';
import { expiryLoop, reconcileLoop } from './background/sweeps.js';
import { startCommandServers } from './messaging/command-server.js';
import { authorityOpenApi } from './openapi.js';
import { projector } from './projector.js';
import { loadAuthorityExtras } from './runtime/authority-extras.js';
import { authoritySigner, buildAuthorityRuntime, type AuthorityRuntime } from './runtime/authority-runtime.js';
import { buildWebhooksRuntime, type WebhooksRuntime } from './webhooks/webhooks-runtime.js';

/** Handlers running at once per replica, requests waiting for one, and how long a JetStream command's answer is cached. */
const COMMAND_LIMITS = {
  concurrencyMax: 256,
  waitingMax: 4_096,
  replyCacheTtlMs: 24 * 3_600_000,
  drainTimeoutMs: 10_000,
};
const REPLY_CACHE_BYTES_MAX = 256 * 1024 * 1024;

export async function authorityService(config: TallyConfig): Promise<ServiceDefinition> {
  const extras = loadAuthorityExtras(config);
  const signer = authoritySigner(config);
  // Read before anything connects, so a bad JWKS file stops the boot at once, naming the setting.
  const oidc = oidcVerifierOf(config);
  let runtime: AuthorityRuntime | undefined;
  const runtimeOf = (ctx: HostContext) => (runtime ??= buildAuthorityRuntime(ctx, signer, extras));
  let webhooks: WebhooksRuntime | undefined;
  const webhooksOf = (ctx: HostContext) => (webhooks ??= buildWebhooksRuntime(ctx, signer));
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
      // The webhook streams exist before any route can register an endpoint.
      await webhooksOf(ctx).provision();
      return directory.authenticator();
    },
    module: (ctx) => AuthorityModule.register(ctx, runtimeOf(ctx), directoryOf(), webhooksOf(ctx)),
    background: async (ctx) => {
      const { authority } = runtimeOf(ctx);
      const commands = await startCommandServers(ctx, authority, {
        ...COMMAND_LIMITS,
        replyCacheMaxBytes: Math.min(REPLY_CACHE_BYTES_MAX, config.streams.queue_max_bytes),
      });
      const stopDirectory = { name: 'directory', stop: () => directoryOf().stop() };
      const deliveries = await webhooksOf(ctx).startDelivery();
      return [...commands, expiryLoop(ctx, authority), reconcileLoop(ctx, authority), ...deliveries, stopDirectory];
    },
  };
}
