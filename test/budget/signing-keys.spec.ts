// Issue 8, item 6 (ADR 0014): signing keys rotate. Two authority replicas share a keyring
// directory; a rotation through one makes a new key active on both (the directory view),
// GET /v1/keys and the JWKS list every unretired key, and what the old key signed (tokens,
// admission proofs, receipts) keeps verifying by key id. The private key is a 0600 file in the
// keyring and appears in no event.
import { createPrivateKey, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { verifyWithPublicKey } from '@tally/budget-infrastructure';
import { sharedNatsUrl } from '@tally/testing';
import {
  admitPayload,
  AuthorityStack,
  eventually,
  monetaryGrant,
  newSubjectKey,
  type Json,
} from './support/authority-stack.js';

let stack: AuthorityStack;
let keyring: string;
beforeAll(async () => {
  keyring = mkdtempSync(join(tmpdir(), 'tally-keyring-e2e-'));
  stack = await AuthorityStack.create('bkeys', { faultInjection: false, env: { TALLY_KEYRING_DIR: keyring } });
  await stack.start();
  await stack.start();
}, 240_000);
afterAll(async () => {
  await stack?.dispose();
  rmSync(keyring, { recursive: true, force: true });
}, 60_000);

async function call(
  replica: number,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${stack.processes[replica]!.url}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Json };
}

const admin = () => ({ authorization: `Bearer ${String(stack.env['TALLY_ADMIN_KEY'])}` });
const claimsOf = (token: string): Json => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as Json;

/** A stored receipt's signature checked as an auditor does: with the public key /v1/keys publishes under its key_id. */
function verifiesWith(receipt: Json, keys: Json[]): boolean {
  const { signature, ...body } = receipt;
  const key = keys.find((k) => k['key_id'] === body['key_id']);
  return key !== undefined && verifyWithPublicKey(body, String(signature), String(key['public_key']));
}

async function storedReceipt(replica: number, id: string): Promise<Json> {
  const res = await eventually(
    () => call(replica, 'GET', `/v1/receipts/${encodeURIComponent(id)}`, undefined, admin()),
    (r) => r.status === 200,
    30_000,
    `receipt ${id}`,
  );
  return res.body;
}

describe('Issue 8: signing keys rotate', () => {
  let firstKey: string;
  let secondKey: string;
  let oldCap: Json;
  let oldAdmission: Json;

  it('Issue 8: rotation through one replica makes a new key active on every replica without invalidating what the old key signed', async () => {
    const before = await call(0, 'GET', '/v1/keys');
    expect(before.body['keys']).toHaveLength(1);
    firstKey = String(before.body['keys'][0]['key_id']);
    oldCap = await stack.issue([monetaryGrant()]);
    expect(claimsOf(String(oldCap['token']))['key_id']).toBe(firstKey);
    oldAdmission = (
      await call(
        0,
        'POST',
        '/v1/admissions',
        admitPayload(oldCap['token'], `r-${randomBytes(4).toString('hex')}`, 'standalone', { requested_cost: 10 }),
      )
    ).body;
    expect(oldAdmission['verdict']).toBe('allow');
    expect(oldAdmission['admission_proof']['key_id']).toBe(firstKey);

    const rotated = await call(0, 'POST', '/v1/signing-keys/rotate', {}, admin());
    expect(rotated.status).toBe(200);
    secondKey = String(rotated.body['key_id']);
    expect(rotated.body).toMatchObject({ status: 'active', previous_key_id: firstKey, algorithm: 'ed25519' });
    expect(secondKey).not.toBe(firstKey);

    // The other replica follows the rotation through its directory view.
    const listed = await eventually(
      () => call(1, 'GET', '/v1/keys'),
      (r) => r.body['keys']?.[0]?.['key_id'] === secondKey,
      10_000,
      'the second replica listing the new key first',
    );
    expect(listed.body['keys'].map((k: Json) => [k['key_id'], k['status']])).toEqual([
      [secondKey, 'active'],
      [firstKey, 'previous'],
    ]);
    const jwks = (await call(1, 'GET', '/.well-known/jwks.json')).body;
    expect(jwks['keys']).toEqual([
      { kty: 'OKP', crv: 'Ed25519', x: rotated.body['public_key'], kid: secondKey, alg: 'EdDSA', use: 'sig' },
      expect.objectContaining({ kty: 'OKP', crv: 'Ed25519', kid: firstKey }),
    ]);

    // The token sealed by the old key still spends, on the replica that did not rotate, and what is signed now is signed by the new key.
    const admitted = await call(
      1,
      'POST',
      '/v1/admissions',
      admitPayload(oldCap['token'], `r-${randomBytes(4).toString('hex')}`, 'standalone', { requested_cost: 10 }),
    );
    expect(admitted.body['verdict']).toBe('allow');
    expect(admitted.body['admission_proof']['key_id']).toBe(secondKey);
    expect(admitted.body['receipt']['key_id']).toBe(secondKey);
    const fresh = await call(
      1,
      'POST',
      '/v1/capabilities',
      { subject_public_key: newSubjectKey(), ttl_seconds: 600, grants: [monetaryGrant()] },
      admin(),
    );
    expect(fresh.status).toBe(201);
    expect(claimsOf(String(fresh.body['token']))['key_id']).toBe(secondKey);

    // The admission proof signed by the old key still settles its hold.
    const settled = await call(1, 'POST', '/v1/settlements', {
      hold_id: oldAdmission['hold_id'],
      admission_proof: oldAdmission['admission_proof'],
      outcome: { kind: 'completed', cost_units: 7, currency: 'USD' },
    });
    expect(settled.status).toBe(200);
    expect(settled.body['receipt']['key_id']).toBe(secondKey);

    // Old and new receipts verify offline with the published keys, each by its own key id.
    const keys = listed.body['keys'] as Json[];
    const oldReceipt = await storedReceipt(1, String(oldAdmission['receipt']['id']));
    const newReceipt = await storedReceipt(0, String(settled.body['receipt']['id']));
    expect([oldReceipt['key_id'], newReceipt['key_id']]).toEqual([firstKey, secondKey]);
    expect(verifiesWith(oldReceipt, keys)).toBe(true);
    expect(verifiesWith(newReceipt, keys)).toBe(true);
    expect(verifiesWith({ ...oldReceipt, key_id: secondKey }, keys)).toBe(false);
  });

  it('Issue 8: the private key is a 0600 file in the keyring and in no event of the directory stream', async () => {
    const files = readdirSync(keyring);
    expect(files).toContain(`${secondKey}.pem`);
    const file = join(keyring, `${secondKey}.pem`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const pem = readFileSync(file, 'utf8');
    const jwk = createPrivateKey(pem).export({ format: 'jwk' });
    const secret = Buffer.from(String(jwk.d), 'base64url');
    const nc = await connect({ servers: sharedNatsUrl() });
    try {
      const jsm = await jetstreamManager(nc);
      const info = await jsm.streams.info(stack.names.directoryEventsStream);
      let seen = 0;
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const msg = await jsm.streams.getMessage(stack.names.directoryEventsStream, { seq });
        if (!msg) continue;
        const raw = Buffer.from(msg.data).toString('utf8');
        for (const form of [
          secret.toString('base64url'),
          secret.toString('base64'),
          secret.toString('hex'),
          'PRIVATE KEY',
        ])
          expect(raw).not.toContain(form);
        if (raw.includes(secondKey)) seen++;
      }
      expect(seen).toBeGreaterThanOrEqual(2); // registered, activated
    } finally {
      await nc.close();
    }
  });

  it('Issue 8: only an admin rotates or retires; retiring the active key is refused, retiring an old one unpublishes it', async () => {
    const tenant = `keys-${randomBytes(3).toString('hex')}`;
    await stack.ok('POST', '/v1/tenants', { id: tenant });
    const issuer = String((await stack.ok('POST', `/v1/tenants/${tenant}/keys`, { role: 'issuer' }))['key']);
    expect((await call(0, 'POST', '/v1/signing-keys/rotate', {}, { authorization: `Bearer ${issuer}` })).status).toBe(
      403,
    );
    expect((await call(0, 'POST', '/v1/signing-keys/rotate', {})).status).toBe(401);
    expect(
      (await call(0, 'POST', `/v1/signing-keys/${firstKey}/retire`, {}, { authorization: `Bearer ${issuer}` })).status,
    ).toBe(403);
    expect((await call(0, 'GET', '/v1/signing-keys', undefined, { authorization: `Bearer ${issuer}` })).status).toBe(
      403,
    );

    const active = await call(1, 'POST', `/v1/signing-keys/${secondKey}/retire`, {}, admin());
    expect(active.status).toBe(409);
    expect(active.body['type']).toBe('signing_key_active');

    const retired = await call(1, 'POST', `/v1/signing-keys/${firstKey}/retire`, {}, admin());
    expect(retired.status).toBe(200);
    expect(retired.body).toMatchObject({ key_id: firstKey, status: 'retired' });
    const published = await eventually(
      () => call(0, 'GET', '/v1/keys'),
      (r) => r.body['keys'].length === 1,
      10_000,
      'the retired key leaving /v1/keys on the other replica',
    );
    expect(published.body['keys'][0]['key_id']).toBe(secondKey);
    // The admin listing still shows it, public key included, so an archive can still be checked.
    const all = (await call(0, 'GET', '/v1/signing-keys', undefined, admin())).body;
    expect(all['active_key_id']).toBe(secondKey);
    expect(all['keys'].map((k: Json) => [k['key_id'], k['status'], k['held_here']])).toEqual([
      [firstKey, 'retired', true],
      [secondKey, 'active', true],
    ]);
    // A token sealed by a retired key no longer verifies: retiring is how a leaked key is cut off.
    const spent = await call(
      0,
      'POST',
      '/v1/admissions',
      admitPayload(oldCap['token'], `r-${randomBytes(4).toString('hex')}`, 'standalone'),
    );
    expect(spent.status).toBe(401);
  });
});
