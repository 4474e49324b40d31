// The authority's side of the directory: start the live view and, before any token is
// handed out or checked, put this replica's signing key in the ledger (registered, and
// active when no key is yet), so both services verify what it signs by key id.
import { startDirectory, type DirectoryRuntime } from '@tally/directory-service';
import type { Ed25519Signer } from '@tally/budget-infrastructure';
import type { HostContext } from '@tally/platform-app';
import type { OidcVerifier } from '@tally/platform-auth';

export async function startDirectoryOf(
  ctx: HostContext,
  signer: Ed25519Signer,
  oidc: OidcVerifier | undefined,
): Promise<DirectoryRuntime> {
  const directory = await startDirectory({
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
  const registered = await directory.commands.registerSigningKey(signer.keyId, signer.publicKeyBase64Url());
  if (!registered.ok)
    throw new Error(`signing key ${signer.keyId} cannot be registered: ${registered.rejection.message}`);
  if (directory.view.activeSigningKeyId === undefined) await directory.commands.activateSigningKey(signer.keyId);
  if (ctx.config.auth.admin_key === undefined)
    ctx.logger.event(
      'warn',
      'no bootstrap admin key (TALLY_ADMIN_KEY): only operator keys and OIDC tokens can operate Tally',
    );
  return directory;
}
