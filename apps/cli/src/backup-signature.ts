// A backup proves where it came from (ADR 0051): `tally backup` signs its manifest with the
// authority's signing key (the keyring, ADR 0014), and `tally restore` checks that signature
// against keys it already trusts (this machine's keyring, or the published keys saved from
// GET /v1/keys or the JWKS) before it believes anything the manifest says: which streams,
// which files, which configurations. The manifest names every file with its sha256, so the
// signature covers the snapshots too. Never the keys inside the backup: those are the
// backup's own claim.
import { verify } from 'node:crypto';
import type { Ed25519Signer, SigningKeyring } from '@tally/budget-infrastructure';
import { canonicalJson } from '@tally/contracts';
import type { TallyConfig } from '@tally/platform-app';
import { authorityKeyringOf } from './authority-keys.js';
import { usageError } from './cli/exit-codes.js';
import { keyRingOf, keysFromFile, type KeyRing } from './receipts/published-keys-file.js';

/** The two fields a signed manifest adds: which key signed, and its signature over everything else. */
export interface ManifestSignature {
  readonly key_id: string;
  /** Ed25519, base64url, over the canonical JSON of the manifest without this field (key_id included). */
  readonly signature: string;
}

/** The keys a restore trusts, and where they came from (for the refusal's message). */
export interface TrustedKeys {
  readonly keys: KeyRing;
  readonly source: string;
}

/** Signs a manifest: the same bytes a restore will canonicalise, whatever JSON.stringify leaves out. */
export function signManifest<T extends object>(unsigned: T, signer: Ed25519Signer): T & ManifestSignature {
  const body = { ...(JSON.parse(JSON.stringify(unsigned)) as T), key_id: signer.keyId };
  return { ...body, signature: signer.sign(body, signer.keyId) };
}

/** The key that signs a backup: `keyId` from the keyring, else the boot key (the one the configuration names). */
export function backupSignerOf(config: TallyConfig, keyId: string | undefined): Ed25519Signer {
  const keyring = authorityKeyringOf(config);
  if (!keyring)
    throw usageError(
      "tally backup signs its manifest with the authority's signing key, and this machine holds none",
      'Run it with the authority’s key: TALLY_SIGNING_KEY or authority.signing_key_path, and authority.keyring_dir.',
    );
  const signer = keyring.signer(keyId ?? keyring.boot.keyId);
  if (!signer)
    throw usageError(
      `the signing key ${keyId} is not in the keyring (${keyring.keyIds().join(', ')})`,
      'Name a key this machine holds with --key-id, or copy its file into authority.keyring_dir.',
    );
  return signer;
}

/** `--keys FILE` (published keys saved from the authority), else the public halves of this machine's keyring. */
export async function trustedKeysOf(config: TallyConfig, keysFile: string | undefined): Promise<TrustedKeys> {
  if (keysFile !== undefined)
    return { keys: await keysFromFile(keysFile), source: `the published keys in ${keysFile}` };
  const keyring = authorityKeyringOf(config);
  if (!keyring)
    throw usageError(
      "tally restore checks the backup's signature against the authority's keys, and this machine holds none",
      'Pass the published keys (GET /v1/keys or /.well-known/jwks.json saved to a file) as --keys FILE, ' +
        'or run it with the authority’s key (TALLY_SIGNING_KEY, authority.keyring_dir).',
    );
  return { keys: publicHalves(keyring), source: 'the authority keys on this machine' };
}

function publicHalves(keyring: SigningKeyring): KeyRing {
  const keys = keyring.keyIds().flatMap((id) => keyring.signer(id)?.publicKeys() ?? []);
  return keyRingOf({ keys }, 'the keyring');
}

/** Why the manifest cannot be trusted, or undefined when a trusted key signed exactly these contents. */
export function manifestSignatureProblem(manifest: Record<string, unknown>, trusted: TrustedKeys): string | undefined {
  const { signature, ...body } = manifest;
  const keyId = body['key_id'];
  if (signature === undefined && keyId === undefined)
    return 'it is not signed (a backup of a release before ADR 0051, or one whose signature was removed)';
  if (typeof signature !== 'string' || typeof keyId !== 'string') return 'its key_id or signature is not a string';
  const key = trusted.keys.get(keyId);
  if (!key) return `it is signed with key ${keyId}, which is not among ${trusted.source}`;
  let ok = false;
  try {
    ok = verify(null, Buffer.from(canonicalJson(body)), key, Buffer.from(signature, 'base64url'));
  } catch {
    ok = false;
  }
  return ok ? undefined : `its signature does not verify with key ${keyId}: the manifest was changed after signing`;
}
