// The budget-authority's composition: which projections, HTTP controllers, command
// handlers and background loops it runs on the shared service host.
import {
  BUDGET_COMMANDS_CONCURRENCY_MAX,
  oidcVerifierOf,
  moduleUrl,
  type BackgroundTask,
  type HostContext,
  type ServiceDefinition,
  type TallyConfig,
} from '@tally/platform-app';
import { startDirectoryOf } from './runtime/directory.js';
import { RevocationWriter, type DirectoryRuntime } from '@tally/directory-service';
import { AuthorityModule } from './authority.module.js';
import { expiryLoop, reconcileLoop, strandedLoop, unsettledLoop } from './background/sweeps.js';
import { startCommandServers } from './messaging/command-server.js';
import { authorityOpenApi } from './openapi.js';
import { projector } from './projector.js';
import { loadAuthorityExtras } from './runtime/authority-extras.js';
import { authorityKeyring, buildAuthorityRuntime, type AuthorityRuntime } from './runtime/authority-runtime.js';
import { RevocationRelay } from './runtime/revocation-relay.js';
import { RotatingSigner } from './runtime/rotating-signer.js';
import { buildWebhooksRuntime, type WebhooksRuntime } from './webhooks/webhooks-runtime.js';

/** Core handlers running at once per replica and requests waiting for one (the JetStream side's limits are the topology's). */
const COMMAND_LIMITS = {
  concurrencyMax: BUDGET_COMMANDS_CONCURRENCY_MAX,
  waitingMax: 4_096,
  drainTimeoutMs: 10_000,
};

export async function authorityService(config: TallyConfig): Promise<ServiceDefinition> {
  const extras = loadAuthorityExtras(config);
  // The boot key and the keyring's keys; a key file others may read stops the boot (ADR 0014).
  const keyring = authorityKeyring(config);
  // Read before anything connects, so a bad JWKS file stops the boot at once, naming the setting.
  const oidc = oidcVerifierOf(config);
  let runtime: AuthorityRuntime | undefined;
  let webhooks: WebhooksRuntime | undefined;
  // Webhook secrets derive from the boot key, which rotation never replaces, so they outlive a rotation.
  const webhooksOf = (ctx: HostContext) => (webhooks ??= buildWebhooksRuntime(ctx, keyring.boot));
  let directory: DirectoryRuntime | undefined;
  let missingActive = (_active: string, _used: string): void => undefined;
  // Signs with the key the directory says is active, on every replica, as soon as its event arrives.
  const signer = new RotatingSigner(
    keyring,
    () => directory,
    (active, used) => missingActive(active, used),
  );
  const runtimeOf = (ctx: HostContext) => (runtime ??= buildAuthorityRuntime(ctx, signer, extras));
  const directoryOf = () => {
    if (!directory) throw new Error('the directory starts in access(), before the HTTP module');
    return directory;
  };
  return {
    service: 'budget-authority',
    httpPort: config.authority.http_port,
    metricsPort: config.authority.metrics_port,
    projector: { url: moduleUrl('./projector', import.meta.url).href, module: projector },
    openapi: authorityOpenApi,
    access: async (ctx) => {
      missingActive = (active, used) =>
        ctx.logger.event('warn', "the active signing key is not in this replica's keyring; signing with another", {
          active_key_id: active,
          signing_key_id: used,
        });
      directory = await startDirectoryOf(ctx, keyring.boot, oidc);
      // The webhook streams exist before any route can register an endpoint.
      await webhooksOf(ctx).provision();
      return directory.authenticator();
    },
    module: (ctx) => AuthorityModule.register(ctx, runtimeOf(ctx), directoryOf(), keyring, webhooksOf(ctx)),
    background: async (ctx) => {
      const { authority } = runtimeOf(ctx);
      const commands = await startCommandServers(ctx, authority, COMMAND_LIMITS);
      const stopDirectory = { name: 'directory', stop: () => directoryOf().stop() };
      const deliveries = await webhooksOf(ctx).startDelivery();
      const relay = await startRevocationRelay(ctx, directoryOf());
      const sweeps = [
        expiryLoop(ctx, authority),
        unsettledLoop(ctx, authority),
        strandedLoop(ctx, authority),
        reconcileLoop(ctx, authority),
      ];
      return [...commands, ...sweeps, ...deliveries, relay, stopDirectory];
    },
  };
}

/** Every revocation of the ledger reaches the revocations bucket, whichever replica relays it (ADR 0049). */
async function startRevocationRelay(ctx: HostContext, directory: DirectoryRuntime): Promise<BackgroundTask> {
  const writer = await RevocationWriter.open(
    ctx.nats.js,
    ctx.nats.names.revocationsBucket,
    ctx.config.nats.publish_timeout_ms,
  );
  const relay = await new RevocationRelay({ ctx, writer, view: directory.revocations }).start();
  return { name: 'revocation-relay', stop: () => relay.stop() };
}
