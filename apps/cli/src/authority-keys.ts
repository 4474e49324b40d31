// The authority's signing keys as the CLI finds them on this machine (ADR 0014): the boot key
// of the configuration (TALLY_SIGNING_KEY, or its key file when it exists; never created here)
// and the keyring directory. Replays re-sign receipts with them; backups sign their manifest.
import { existsSync } from 'node:fs';
import { Ed25519Signer, SigningKeyring } from '@tally/budget-infrastructure';
import type { TallyConfig } from '@tally/platform-app';

/** Undefined when this machine holds no authority key. */
export function authorityKeyringOf(config: TallyConfig): SigningKeyring | undefined {
  const a = config.authority;
  if (a.signing_key) return SigningKeyring.open(Ed25519Signer.fromSeed(a.signing_key), a.keyring_dir);
  if (existsSync(a.signing_key_path))
    return SigningKeyring.open(Ed25519Signer.loadOrCreate(a.signing_key_path), a.keyring_dir);
  return undefined;
}
