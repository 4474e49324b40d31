// Issue 8, redaction: bad input carrying every kind of secret (a capability token, an
// operator key, the bootstrap admin key, a JWT, an admission proof) is dead-lettered with
// its reason, and neither the dead-letter stream nor the authority's log keeps any of them.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { Headers } from '@tally/contracts';
import { sharedNatsUrl } from '@tally/testing';
import { TEST_ADMIN_KEY } from '../support/auth.js';
import { admitPayload, AuthorityStack, eventually, monetaryGrant, type Json } from './support/authority-stack.js';

let stack: AuthorityStack;
beforeAll(async () => {
  stack = await AuthorityStack.create('bredact');
  await stack.start();
}, 180_000);
afterAll(async () => stack?.dispose(), 60_000);

const JWT =
  'eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlIiwic3ViIjoiYWxpY2UifQ.c2lnbmF0dXJlLW9mLXRoZS1qd3Q';

describe('Issue 8: dead letters and logs never hold a credential', () => {
  it('Issue 8: bad input over NATS and HTTP carrying a capability token, an operator key, the admin key, a JWT and an admission proof is dead-lettered with every one of them redacted, and the log holds none', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    const operator = await stack.ok('POST', '/v1/tenants/default/keys', { role: 'reader' });
    const operatorKey = operator['key'] as string;
    const admitted = await stack.admit(admitPayload(cap['token'], 'redact-ok', 'standalone'));
    const proof = admitted['admission_proof'] as Json;
    const secrets = [cap['token'] as string, operatorKey, TEST_ADMIN_KEY, JWT, proof['signature'] as string];

    // NATS: a bad Admit (unknown fields, a bad cost) with secrets in the body and an Authorization header.
    const nc = await connect({ servers: sharedNatsUrl() });
    try {
      const hdrs = natsHeaders();
      hdrs.set(Headers.commandId, 'redact-nats-1');
      hdrs.set('Authorization', `Bearer ${TEST_ADMIN_KEY}`);
      const bad = {
        ...admitPayload(cap['token'], `with ${operatorKey}`, 'standalone'),
        requested_cost: -1,
        authorization: `Bearer ${JWT}`,
        admin_key: TEST_ADMIN_KEY,
        admission_proof: proof,
      };
      const reply = await nc.request(stack.names.requestSubject('budget', 'admit'), JSON.stringify(bad), {
        headers: hdrs,
        timeout: 30_000,
      });
      expect(JSON.parse(reply.string())['error']['type']).toBe('validation');
    } finally {
      await nc.close();
    }
    // HTTP: a bad settlement with the secrets in its body.
    const http = await stack.http('POST', '/v1/settlements', {
      hold_id: `x ${JWT}`,
      outcome: { kind: 'completed' },
      admission_proof: proof,
      token: cap['token'],
      note: `${operatorKey} ${TEST_ADMIN_KEY}`,
    });
    expect(http.status).toBe(400);

    const letters = await eventually(
      () => stack.deadLetters(),
      (l) =>
        l.some((d) => d['original_subject'] === stack.names.requestSubject('budget', 'admit')) &&
        l.some((d) => String(d['source']).startsWith('http-')),
      30_000,
      'both dead letters',
    );
    for (const letter of letters) {
      const stored = JSON.stringify(letter) + Buffer.from(String(letter['data_base64']), 'base64').toString();
      for (const secret of secrets) expect(stored).not.toContain(secret);
      expect(letter['reason']).toBe('validation_failed');
      expect((letter['redacted'] as string[]).length).toBeGreaterThan(0);
    }
    const nats = letters.find((d) => d['original_subject'] === stack.names.requestSubject('budget', 'admit'))!;
    expect(nats['headers']['Authorization']).toEqual(['[redacted]']);
    expect(nats['redacted']).toEqual(expect.arrayContaining(['$.token', '$.admission_proof', '$.authorization']));

    // The log: a request whose URL carries a token, and the dead-letter warnings above.
    await stack.http('GET', `/v1/capabilities/${cap['id']}?token=${cap['token']}`);
    const logs = stack.processes.map((p) => p.logs()).join('\n');
    expect(logs).toContain('dead-lettered');
    for (const secret of secrets) expect(logs).not.toContain(secret);
  });
});
