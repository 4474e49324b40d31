// The authority's private signing keys (ADR 0014). The ledger publishes every key's public
// half; the private halves never enter an event. They live here: the configured boot key
// (TALLY_SIGNING_KEY or its key file) and a keyring directory of `<key_id>.pem` files, each
// PKCS#8 and readable by its owner only. Rotation writes a new file; a replica that sees an
// active key it does not hold reads the directory again, so replicas sharing the directory
// (a volume, a mounted secret) follow a rotation made through any one of them.
import { existsSync, mkdirSync, readdirSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Ed25519Signer } from './ed25519-signer.js';

const KEY_ID = /^[A-Za-z0-9_-]{1,64}$/;
const SUFFIX = '.pem';
/** A keyring holds a handful of keys; more files than this is not a keyring. */
export const KEYRING_KEYS_MAX = 64;
/** How often a missing key sends this replica back to the directory, so a miss is not a disk read per signature. */
const REREAD_COOLDOWN_MS = 1_000;

export class SigningKeyring {
  private readonly keys = new Map<string, Ed25519Signer>();
  private readonly lastMiss = new Map<string, number>();

  private constructor(
    readonly boot: Ed25519Signer,
    /** Undefined: only the boot key, and rotation needs a key id already held. */
    readonly dir: string | undefined,
    private readonly nowMs: () => number,
  ) {
    this.keys.set(boot.keyId, boot);
  }

  /** The boot key plus every key file in `dir` (when it exists); a file others may read stops the boot. */
  static open(boot: Ed25519Signer, dir: string | undefined, nowMs: () => number = Date.now): SigningKeyring {
    const ring = new SigningKeyring(boot, dir, nowMs);
    if (dir !== undefined && existsSync(dir)) {
      const files = readdirSync(dir).filter((f) => f.endsWith(SUFFIX));
      if (files.length > KEYRING_KEYS_MAX)
        throw new Error(`keyring ${dir} holds ${files.length} keys; at most ${KEYRING_KEYS_MAX} are read`);
      for (const file of files) ring.add(readKeyFile(join(dir, file), file.slice(0, -SUFFIX.length)));
    }
    return ring;
  }

  /** The key ids this replica can sign with. */
  keyIds(): string[] {
    return [...this.keys.keys()];
  }

  /** The private key of `keyId`, reading the directory again (at most once a second per id) when it is not held. */
  signer(keyId: string): Ed25519Signer | undefined {
    const held = this.keys.get(keyId);
    if (held || this.dir === undefined || !KEY_ID.test(keyId)) return held;
    const now = this.nowMs();
    if (now - (this.lastMiss.get(keyId) ?? -Infinity) < REREAD_COOLDOWN_MS) return undefined;
    const file = join(this.dir, `${keyId}${SUFFIX}`);
    if (!existsSync(file)) {
      this.lastMiss.set(keyId, now);
      if (this.lastMiss.size > KEYRING_KEYS_MAX) this.lastMiss.delete(this.lastMiss.keys().next().value!);
      return undefined;
    }
    const key = readKeyFile(file, keyId);
    this.add(key);
    return key;
  }

  holds(keyId: string): boolean {
    return this.signer(keyId) !== undefined;
  }

  /** The signature by `keyId`, or undefined when this replica does not hold it (the projection's re-sign check). */
  signAs(keyId: string, value: unknown): string | undefined {
    return this.signer(keyId)?.sign(value);
  }

  /** A new key, written as `<key_id>.pem` (0600) in the keyring directory before anyone may use it. */
  generate(): Ed25519Signer {
    if (this.dir === undefined) throw new Error('no keyring directory is configured (authority.keyring_dir)');
    if (this.keys.size >= KEYRING_KEYS_MAX) throw new Error(`the keyring holds ${KEYRING_KEYS_MAX} keys already`);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    // Written under a temporary name and renamed, so no replica ever reads half a key.
    const temporary = join(this.dir, `.new-${randomUUID()}`);
    const key = Ed25519Signer.loadOrCreate(temporary);
    renameSync(temporary, join(this.dir, `${key.keyId}${SUFFIX}`));
    this.add(key);
    return key;
  }

  private add(key: Ed25519Signer): void {
    this.keys.set(key.keyId, key);
  }
}

/**
 * A key file that others may read, or anyone but its owner may write, is refused. Tally writes
 * 0600; group read is tolerated because Kubernetes adds it to a secret volume under fsGroup.
 * A file whose key is not the one its name says is refused too: it would sign under a wrong id.
 */
function readKeyFile(file: string, keyId: string): Ed25519Signer {
  const mode = statSync(file).mode & 0o777;
  if ((mode & 0o027) !== 0)
    throw new Error(
      `keyring file ${file} has mode ${mode.toString(8)}; a signing key must be readable by its owner only (chmod 600 it)`,
    );
  const key = Ed25519Signer.loadOrCreate(file);
  if (key.keyId !== keyId) throw new Error(`keyring file ${file} holds key ${key.keyId}, not ${keyId}`);
  return key;
}
