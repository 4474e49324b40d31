// Proves the authority's signer: canonical JSON, deterministic Ed25519 signatures, published raw keys, and a persisted local key.
import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ed25519Signer, canonicalJson, verifyWithPublicKey } from '../src/index.js';

describe('Ed25519 signer', () => {
  it('B17 canonical JSON sorts keys, drops whitespace and writes bigint as a decimal string', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, 'x'], c: 2n ** 70n }, u: undefined })).toBe(
      '{"a":{"c":"1180591620717411303424","d":[1,"x"]},"b":1}',
    );
  });

  it('B17 the same body signs to the same signature, which verifies with the published raw public key', () => {
    const signer = Ed25519Signer.generate();
    const body = { verdict: 'allow', amount: 5n, nested: { z: 1, a: 2 } };
    const signature = signer.sign(body);
    expect(signer.sign({ nested: { a: 2, z: 1 }, amount: 5n, verdict: 'allow' })).toBe(signature);
    const [key] = signer.publicKeys();
    expect(key).toMatchObject({ key_id: signer.keyId, algorithm: 'ed25519' });
    expect(Buffer.from(key!.public_key, 'base64url')).toHaveLength(32);
    expect(verifyWithPublicKey(body, signature, key!.public_key)).toBe(true);
    expect(signer.verify({ ...body, verdict: 'deny' }, signature, signer.keyId)).toBe(false);
  });

  it('a key from a raw seed or a persisted PEM signs identically after a restart', () => {
    const seed = Buffer.alloc(32, 7).toString('base64url');
    expect(Ed25519Signer.fromSeed(seed).sign({ a: 1 })).toBe(Ed25519Signer.fromSeed(seed).sign({ a: 1 }));
    const dir = mkdtempSync(join(tmpdir(), 'tally-key-'));
    try {
      const first = Ed25519Signer.loadOrCreate(join(dir, 'keys', 'authority.pem'));
      const again = Ed25519Signer.loadOrCreate(join(dir, 'keys', 'authority.pem'));
      expect(again.keyId).toBe(first.keyId);
      expect(again.sign({ a: 1 })).toBe(first.sign({ a: 1 }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
