// Issue 8: the orchestrator verifies an admission proof before a paid call: the signature of
// a published key over the proof's claims, for the hold it names. A key id the directory does
// not show yet is looked up at the authority's GET /v1/keys (a real local HTTP server here),
// cached, and fetched again at most once per cooldown, so a rotation is followed and unknown
// key ids cannot hammer the authority.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { canonicalJson } from '@tally/budget-infrastructure';
import { AdmissionProofVerifier, type KnownKeys } from '../src/budget/admission-proofs.js';

interface TestKey {
  readonly keyId: string;
  readonly privateKey: KeyObject;
  readonly x: string;
}

const newKey = (keyId: string): TestKey => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { keyId, privateKey, x: publicKey.export({ format: 'jwk' }).x! };
};

const proofBy = (key: TestKey, holdId: string) => {
  const claims = { hold_id: holdId, request_id: 'r-1', capability_id: 'cap_x', grant_index: 0, issued_at_ms: 1 };
  return {
    claims,
    key_id: key.keyId,
    signature: sign(null, Buffer.from(canonicalJson(claims)), key.privateKey).toString('base64url'),
  };
};

/** The directory's published keys, as PublishedKeys offers them. */
class Directory implements KnownKeys {
  constructor(private readonly keys: TestKey[]) {}
  list() {
    return this.keys.map((k) => ({ key_id: k.keyId }));
  }
  verify(value: unknown, signature: string, keyId: string): boolean {
    const key = this.keys.find((k) => k.keyId === keyId);
    if (!key) return false;
    const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: key.x }, format: 'jwk' });
    return verify(null, Buffer.from(canonicalJson(value)), publicKey, Buffer.from(signature, 'base64url'));
  }
}

describe('Issue 8: admission proofs verified against the published keys', () => {
  const first = newKey('k-first');
  const rotated = newKey('k-rotated');
  let served: TestKey[] = [first];
  let fetches = 0;
  let server: Server;
  let url: string;
  let now = 1_000_000;

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url !== '/v1/keys') {
        res.writeHead(404).end();
        return;
      }
      fetches++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ keys: served.map((k) => ({ key_id: k.keyId, algorithm: 'ed25519', public_key: k.x })) }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const verifier = (known: TestKey[], authorityUrl: string | null = url) =>
    new AdmissionProofVerifier(new Directory(known), {
      ...(authorityUrl === null ? {} : { authorityUrl }),
      cooldownMs: 30_000,
      timeoutMs: 2_000,
      nowMs: () => now,
    });

  it('Issue 8: a proof of a published key verifies only for its own hold and unedited', async () => {
    const v = verifier([first]);
    const proof = proofBy(first, 'hold-1');
    expect(await v.verify(proof, 'hold-1')).toBe(true);
    expect(await v.verify(proof, 'hold-2')).toBe(false);
    expect(await v.verify({ ...proof, claims: { ...proof.claims, grant_index: 1 } }, 'hold-1')).toBe(false);
    expect(await v.verify({ ...proof, signature: proofBy(newKey('k-first'), 'hold-1').signature }, 'hold-1')).toBe(
      false,
    );
    expect(fetches).toBe(0);
  });

  it('Issue 8: a key id the directory does not show yet is fetched from GET /v1/keys, cached, and refetched at most once per cooldown', async () => {
    const v = verifier([first]);
    const before = fetches;
    // The authority rotated; the directory event has not arrived here yet.
    served = [first, rotated];
    expect(await v.verify(proofBy(rotated, 'hold-r'), 'hold-r')).toBe(true);
    expect(fetches).toBe(before + 1);
    expect(await v.verify(proofBy(rotated, 'hold-s'), 'hold-s')).toBe(true);
    expect(fetches).toBe(before + 1);
    // An unknown key id (a forger's) fetches once, then waits out the cooldown.
    const stranger = newKey('k-stranger');
    expect(await v.verify(proofBy(stranger, 'hold-t'), 'hold-t')).toBe(false);
    expect(await v.verify(proofBy(stranger, 'hold-u'), 'hold-u')).toBe(false);
    expect(fetches).toBe(before + 1);
    now += 30_001;
    expect(await v.verify(proofBy(stranger, 'hold-v'), 'hold-v')).toBe(false);
    expect(fetches).toBe(before + 2);
  });

  it('Issue 8: without the authority URL, or with it unreachable, an unknown key id fails closed', async () => {
    expect(await verifier([first], null).verify(proofBy(rotated, 'hold-w'), 'hold-w')).toBe(false);
    expect(await verifier([first], 'http://127.0.0.1:9').verify(proofBy(rotated, 'hold-x'), 'hold-x')).toBe(false);
  });
});
