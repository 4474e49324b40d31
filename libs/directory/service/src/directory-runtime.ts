// What both services start for the trust boundary: the live directory view (tenants,
// operator keys, signing keys), the revocation view (ADR 0049), the published keys, and the
// authenticator the access guard uses. The authority also gets the directory commands, since
// only it writes the directory.
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { CAPABILITY_TTL_SECONDS_MAX, type TallyNames } from '@tally/contracts';
import { Authenticator, knownTenantsOnly, type CapabilityVerifier, type OidcVerifier } from '@tally/platform-auth';
import { JetStreamEventStore } from '@tally/platform-jetstream';
import { CapabilityTokenVerifier } from './capability-tokens.js';
import { DirectoryCommands } from './directory-commands.js';
import { directoryEventRegistry } from './directory-events.dtos.js';
import { DirectoryView } from './directory-view.js';
import { PublishedKeys } from './published-keys.js';
import { RevocationView } from './revocation-view.js';

/** How long a directory read that found nothing waits for this replica's view to catch up (ADR 0048). */
export const DIRECTORY_READ_WAIT_MS = 5_000;

export interface DirectoryRuntimeOptions {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly names: TallyNames;
  readonly publishTimeoutMs: number;
  readonly adminKey: string | undefined;
  readonly oidc: OidcVerifier | undefined;
  readonly staleAfterMs: number;
  readonly freshnessCheckMs: number;
  readonly keysPerTenantMax: number;
  readonly nowMs: () => number;
  readonly onError: (error: unknown) => void;
}

export interface DirectoryRuntime {
  readonly view: DirectoryView;
  readonly revocations: RevocationView;
  readonly keys: PublishedKeys;
  readonly capabilityTokens: CapabilityTokenVerifier;
  readonly commands: DirectoryCommands;
  /** The authenticator of the access guard; a service may verify capability tokens its own way. */
  authenticator(capabilities?: CapabilityVerifier): Authenticator;
  stop(): Promise<void>;
}

export async function startDirectory(o: DirectoryRuntimeOptions): Promise<DirectoryRuntime> {
  const view = new DirectoryView({
    js: o.js,
    jsm: o.jsm,
    stream: o.names.directoryEventsStream,
    filterSubject: o.names.directoryEventsWildcard,
    tenantSubject: (tenantId) => o.names.directoryTenantSubject(tenantId),
    readWaitMs: DIRECTORY_READ_WAIT_MS,
    staleAfterMs: o.staleAfterMs,
    freshnessCheckMs: o.freshnessCheckMs,
    startTimeoutMs: 30_000,
    restartDelayMs: 1_000,
    nowMs: o.nowMs,
    onError: o.onError,
  });
  await view.start();
  const revocations = new RevocationView({
    js: o.js,
    jsm: o.jsm,
    bucket: o.names.revocationsBucket,
    startTimeoutMs: 30_000,
    restartDelayMs: 1_000,
    retainMs: CAPABILITY_TTL_SECONDS_MAX * 1000,
    nowMs: o.nowMs,
    onError: o.onError,
  });
  await revocations.start();
  const keys = new PublishedKeys(view);
  const capabilityTokens = new CapabilityTokenVerifier(keys, o.nowMs, revocations);
  const store = new JetStreamEventStore(o.js, o.jsm, {
    stream: o.names.directoryEventsStream,
    registry: directoryEventRegistry(),
    publishTimeoutMs: o.publishTimeoutMs,
    loadEventsMax: 100_000,
    loadIdleTimeoutMs: 5_000,
  });
  const commands = new DirectoryCommands({
    store,
    view,
    tenantSubject: (id) => o.names.directoryTenantSubject(id),
    signingKeysSubject: o.names.directorySigningKeysSubject,
    nowMs: o.nowMs,
    appendAttemptsMax: 16,
    viewWaitMs: 10_000,
    keysPerTenantMax: o.keysPerTenantMax,
  });
  // A token of an identity provider can name any tenant; Tally acts only in those its ledger created.
  const oidc = o.oidc && knownTenantsOnly(o.oidc, (tenantId) => view.knownTenant(tenantId).then(Boolean));
  return {
    view,
    revocations,
    keys,
    capabilityTokens,
    commands,
    authenticator: (capabilities = capabilityTokens) =>
      new Authenticator({
        ...(o.adminKey === undefined ? {} : { adminKey: o.adminKey }),
        operatorKeys: view,
        ...(oidc === undefined ? {} : { oidc }),
        capabilities,
        nowMs: o.nowMs,
      }),
    stop: async () => {
      await revocations.stop();
      await view.stop();
    },
  };
}
