// Issue 8, item 6 (ADR 0014): the keyring that holds the private signing keys. A rotation
// writes a 0600 file named by its key id; another replica on the same directory finds it by
// id; a file others may read, or one whose key is not the one its name says, is refused.
import { afterEach, describe, expect, it } from '@jest/globals';
import { chmodSync, copyFileSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ed25519Signer, SigningKeyring, verifyWithPublicKey } from '../src/index.js';

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'tally-keyring-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('Issue 8: the signing keyring', () => {
  it('Issue 8: a generated key is a 0600 file named by its key id, and signs what its public key verifies', () => {
    const dir = join(tempDir(), 'keyring');
    const ring = SigningKeyring.open(Ed25519Signer.generate(), dir);
    const key = ring.generate();
    expect(readdirSync(dir)).toEqual([`${key.keyId}.pem`]);
    expect(statSync(join(dir, `${key.keyId}.pem`)).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o077).toBe(0);
    const body = { receipt: 1 };
    expect(verifyWithPublicKey(body, ring.signAs(key.keyId, body)!, key.publicKeyBase64Url())).toBe(true);
    expect(ring.keyIds()).toEqual([ring.boot.keyId, key.keyId]);
  });

  it('Issue 8: another replica on the same directory finds a key rotated after it started, by its id', () => {
    const dir = tempDir();
    let now = 0;
    const other = SigningKeyring.open(Ed25519Signer.generate(), dir, () => now);
    expect(other.holds('ed25519-notyetthere0')).toBe(false);
    const rotated = SigningKeyring.open(Ed25519Signer.generate(), dir).generate();
    // A miss is remembered for a second, so a missing key is not a disk read per signature.
    expect(other.holds(rotated.keyId)).toBe(true);
    expect(other.signAs(rotated.keyId, { a: 1 })).toBe(rotated.sign({ a: 1 }));
    now += 5_000;
    expect(other.holds('ed25519-notyetthere0')).toBe(false);
    expect(other.signAs('../../etc/passwd', {})).toBeUndefined();
  });

  it('Issue 8: a key file that others may read or the group may write stops the keyring, naming the file', () => {
    const dir = tempDir();
    const key = SigningKeyring.open(Ed25519Signer.generate(), dir).generate();
    const file = join(dir, `${key.keyId}.pem`);
    for (const mode of [0o644, 0o604, 0o660]) {
      chmodSync(file, mode);
      expect(() => SigningKeyring.open(Ed25519Signer.generate(), dir)).toThrow(
        new RegExp(`${key.keyId}\\.pem has mode ${mode.toString(8)}; a signing key must be readable by its owner only`),
      );
    }
    // Group read, as a Kubernetes secret volume under fsGroup mounts it, is tolerated.
    chmodSync(file, 0o440);
    expect(SigningKeyring.open(Ed25519Signer.generate(), dir).holds(key.keyId)).toBe(true);
  });

  it('Issue 8: a file whose key is not the key its name says is refused', () => {
    const source = tempDir();
    const key = SigningKeyring.open(Ed25519Signer.generate(), source).generate();
    const dir = tempDir();
    const ring = SigningKeyring.open(Ed25519Signer.generate(), dir);
    copyFileSync(join(source, `${key.keyId}.pem`), join(dir, 'ed25519-somethingelse1.pem'));
    chmodSync(join(dir, 'ed25519-somethingelse1.pem'), 0o600);
    expect(() => ring.signer('ed25519-somethingelse1')).toThrow(/holds key .* not ed25519-somethingelse1/);
  });
});
