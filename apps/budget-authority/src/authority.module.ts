// The budget-authority's HTTP module: controllers over the BudgetAuthority facade and the
// ledger projection; the test-only faults controller only when fault injection is on.
import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { BudgetQueries, OverviewQueries } from '@tally/budget-projections';
import type { HostContext } from '@tally/platform-app';
import { IdempotencyRecords } from '@tally/platform-jetstream';
import { Idempotency } from './http/idempotency.js';
import { AUTHORITY_PORT } from './authority.port.js';
import { AdmissionsController } from './http/admissions.controller.js';
import { CapabilitiesController } from './http/capabilities.controller.js';
import { FaultsController } from './http/faults.controller.js';
import { Freshness } from './http/freshness.js';
import { ReceiptsController } from './http/receipts.controller.js';
import { PUBLISHED_KEYS } from './http/admissions.controller.js';
import { CAPABILITY_TOKENS, CapabilityAccess } from './http/capability-access.js';
import { KeysController } from './http/keys.controller.js';
import { SIGNING_KEYRING, SigningKeysController } from './http/signing-keys.controller.js';
import type { SigningKeyring } from '@tally/budget-infrastructure';
import { DIRECTORY_COMMANDS, DIRECTORY_VIEW, TenantsController } from './http/tenants.controller.js';
import { RevocationWriter, type DirectoryRuntime } from '@tally/directory-service';
import { loadConsoleAssets } from './console/console-assets.js';
import { CONSOLE_ASSETS, CONSOLE_ORCHESTRATOR_URL, ConsoleController } from './console/console.controller.js';
import { OverviewController } from './http/overview.controller.js';
import { FAULT_TARGETS } from './runtime/fault-targets.js';
import type { AuthorityRuntime } from './runtime/authority-runtime.js';
import { RevocationNotices } from './runtime/revocation-notices.js';
import { WEBHOOKS_RUNTIME, WebhooksController } from './http/webhooks.controller.js';
import type { WebhooksRuntime } from './webhooks/webhooks-runtime.js';

/** How long a projection-backed read waits for the projection to reach the tree's last event. */
export const READ_WAIT_MS = 5_000;

/** Every controller the authority may mount (the faults controller only with fault injection on). */
export const AUTHORITY_CONTROLLERS: readonly Type[] = [
  CapabilitiesController,
  AdmissionsController,
  ReceiptsController,
  KeysController,
  TenantsController,
  SigningKeysController,
  WebhooksController,
  OverviewController,
];
export const AUTHORITY_OPTIONAL_CONTROLLERS: readonly Type[] = [FaultsController, ConsoleController];

@Module({})
export class AuthorityModule {
  static register(
    ctx: HostContext,
    runtime: AuthorityRuntime,
    directory: DirectoryRuntime,
    keyring: SigningKeyring,
    webhooks: WebhooksRuntime,
  ): DynamicModule {
    const controllers: Type[] = [...AUTHORITY_CONTROLLERS];
    const providers = [
      { provide: PUBLISHED_KEYS, useValue: directory.keys },
      { provide: CAPABILITY_TOKENS, useValue: directory.capabilityTokens },
      { provide: DIRECTORY_COMMANDS, useValue: directory.commands },
      { provide: DIRECTORY_VIEW, useValue: directory.view },
      { provide: SIGNING_KEYRING, useValue: keyring },
      { provide: WEBHOOKS_RUNTIME, useValue: webhooks },
      CapabilityAccess,
      {
        provide: Idempotency,
        useFactory: async () =>
          new Idempotency(
            await IdempotencyRecords.open(ctx.nats.js, ctx.nats.names, ctx.config.nats.publish_timeout_ms),
          ),
      },
      {
        provide: RevocationNotices,
        useFactory: async () =>
          new RevocationNotices(
            await RevocationWriter.open(
              ctx.nats.js,
              ctx.nats.names.revocationsBucket,
              ctx.config.nats.publish_timeout_ms,
            ),
            directory.revocations,
            ctx.logger,
          ),
      },
      { provide: AUTHORITY_PORT, useValue: runtime.authority },
      { provide: BudgetQueries, useValue: new BudgetQueries(ctx.dataSource) },
      { provide: OverviewQueries, useValue: new OverviewQueries(ctx.dataSource) },
      { provide: Freshness, useValue: new Freshness(ctx, { readWaitMs: READ_WAIT_MS }) },
    ];
    // The web console (ADR 0034): on unless console.enabled is false.
    if (ctx.config.console.enabled) {
      controllers.push(ConsoleController);
      providers.push(
        { provide: CONSOLE_ASSETS, useValue: loadConsoleAssets() } as never,
        { provide: CONSOLE_ORCHESTRATOR_URL, useValue: ctx.config.console.orchestrator_url } as never,
      );
    }
    if (runtime.faults) {
      controllers.push(FaultsController);
      providers.push({ provide: FAULT_TARGETS, useValue: runtime.faults } as never);
    }
    return { module: AuthorityModule, controllers, providers };
  }
}
