// The authority's signer under rotation (ADR 0014): it signs with the key the directory says
// is active, taken from the keyring, and verifies with every published key by key id. The
// directory view is the same on every replica, so a rotation through one replica moves every
// replica to the new key as soon as its event arrives. A replica that does not hold the active
// key (its keyring directory is not shared) keeps signing with the newest unretired key it
// holds, which still verifies everywhere, and says so once per key in the log.
import type { PublicKeyDescription, Signer } from '@tally/budget-application';
import type { SigningKeyring } from '@tally/budget-infrastructure';
import type { SigningKeyRecord } from '@tally/directory-domain';
import type { DirectoryView, PublishedKeys } from '@tally/directory-service';

export interface SigningDirectory {
  readonly view: DirectoryView;
  readonly keys: PublishedKeys;
}

export class RotatingSigner implements Signer {
  private readonly warned = new Set<string>();

  constructor(
    private readonly keyring: SigningKeyring,
    /** Undefined until the directory has started: until then the boot key signs and verifies. */
    private readonly directory: () => SigningDirectory | undefined,
    private readonly onMissingActive: (activeKeyId: string, usedKeyId: string) => void,
  ) {}

  get keyId(): string {
    const view = this.directory()?.view;
    const active = view?.activeSigningKeyId;
    if (view === undefined || active === undefined) return this.keyring.boot.keyId;
    if (this.keyring.holds(active)) return active;
    const fallback = newestHeld(view.signingKeys(), this.keyring) ?? this.keyring.boot.keyId;
    if (!this.warned.has(active)) {
      this.warned.add(active);
      this.onMissingActive(active, fallback);
    }
    return fallback;
  }

  sign(value: unknown, keyId: string = this.keyId): string {
    const key = this.keyring.signer(keyId);
    if (!key) throw new Error(`signing key ${keyId} is not in this replica's keyring`);
    return key.sign(value);
  }

  verify(value: unknown, signature: string, keyId: string): boolean {
    const directory = this.directory();
    if (directory) return directory.keys.verify(value, signature, keyId);
    return this.keyring.boot.verify(value, signature, keyId);
  }

  accepts(keyId: string): boolean {
    const view = this.directory()?.view;
    if (!view) return keyId === this.keyring.boot.keyId;
    const record = view.signingKey(keyId);
    return record !== undefined && record.status !== 'retired';
  }

  publicKeys(): PublicKeyDescription[] {
    const directory = this.directory();
    if (!directory) return this.keyring.boot.publicKeys();
    return directory.keys.list().map(({ key_id, algorithm, public_key }) => ({ key_id, algorithm, public_key }));
  }
}

/** The most recently activated (else registered) key that is not retired and that this replica holds. */
function newestHeld(keys: readonly SigningKeyRecord[], keyring: SigningKeyring): string | undefined {
  const usable = keys
    .filter((k) => k.status !== 'retired' && keyring.holds(k.key_id))
    .sort((a, b) => (b.activated_at_ms ?? b.registered_at_ms) - (a.activated_at_ms ?? a.registered_at_ms));
  return usable[0]?.key_id;
}
