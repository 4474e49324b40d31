// Proves that a dead letter never keeps a capability token (ADR 0007): every `token`
// string is replaced by its sha256 fingerprint wherever it sits, a body that cannot be
// parsed but names a token is withheld with its size and digest, and anything else is
// kept byte for byte.
import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { deadLetterRecord, redactCredentials } from '../src/index.js';

const fp = (s: string) => createHash('sha256').update(s).digest('base64url');
const bytes = (s: string) => Buffer.from(s);
const text = (d: Uint8Array) => Buffer.from(d).toString();

describe('dead-letter redaction', () => {
  it('replaces every token string, nested and in arrays, by its fingerprint and names where', () => {
    const out = redactCredentials(
      bytes(JSON.stringify({ work_id: 'w', token: 'secret-1', legs: [{ token: 'secret-2' }], meta: { token: 7 } })),
    );
    expect(JSON.parse(text(out.data))).toEqual({
      work_id: 'w',
      token: `[redacted sha256:${fp('secret-1')}]`,
      legs: [{ token: `[redacted sha256:${fp('secret-2')}]` }],
      meta: { token: 7 },
    });
    expect(out.redacted).toEqual(['$.legs[0].token', '$.token']);
    expect(text(out.data)).not.toContain('secret');
  });

  it('withholds an unparseable body that names a token, and keeps other bodies as they are', () => {
    const broken = bytes('{"work_id":"w","token":"secret-3",');
    const out = redactCredentials(broken);
    expect(out.redacted).toEqual(['$']);
    expect(JSON.parse(text(out.data))).toEqual({
      withheld: expect.any(String),
      bytes: broken.length,
      sha256: createHash('sha256').update(broken).digest('base64url'),
    });
    const plain = bytes('{"work_id": "w2", cost_minor');
    expect(redactCredentials(plain)).toEqual({ data: plain, redacted: [] });
    const noToken = bytes('{"a":1}');
    expect(redactCredentials(noToken).data).toBe(noToken);
  });

  it('the stored record carries the redacted body and the list', () => {
    const record = deadLetterRecord({
      source: 's',
      reason: 'validation_failed',
      detail: 'd',
      originalSubject: 'x',
      data: bytes('{"token":"secret-4"}'),
    });
    expect(Buffer.from(record.data_base64, 'base64').toString()).toBe(
      `{"token":"[redacted sha256:${fp('secret-4')}]"}`,
    );
    expect(record.redacted).toEqual(['$.token']);
  });

  it('Issue 8: operator keys, admin keys, JWTs and admission proofs never stay in a dead letter: in the body under any key, in headers, in the detail and in field errors', () => {
    const operatorKey = `tally_key_0123456789abcdef_${'S'.repeat(43)}`;
    const adminKey = `tally_admin_${'A'.repeat(43)}`;
    const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXBhcnQ';
    const capability = 'c1.eyJpZCI6ImNhcCJ9.c2ln';
    const proof = { claims: { hold_id: 'h' }, key_id: 'k', signature: 'proof-signature-value' };
    const body = {
      request_id: jwt,
      server_id: `see ${operatorKey}`,
      nested: [{ note: `Bearer ${adminKey}` }],
      authorization: 'an-arbitrary-bootstrap-key-of-32-characters',
      parent_token: capability,
      admission_proof: proof,
      requested_tokens: 5,
    };
    const record = deadLetterRecord({
      source: 's',
      reason: 'validation_failed',
      detail: `POST /v1/admissions with ${jwt}`,
      errors: [{ field: 'server_id', message: `server_id ${operatorKey} is not allowed` }],
      originalSubject: 'x',
      data: bytes(JSON.stringify(body)),
      headers: (() => {
        const h = natsHeaders();
        h.set('Authorization', `Bearer ${adminKey}`);
        h.set('x-api-key', capability);
        h.set('Tally-Command-Id', 'cmd-1');
        return h;
      })(),
    });
    const stored = JSON.stringify(record) + Buffer.from(record.data_base64, 'base64').toString();
    for (const secret of [
      operatorKey,
      'S'.repeat(43),
      adminKey,
      jwt,
      capability,
      'an-arbitrary-bootstrap-key-of-32-characters',
      'proof-signature-value',
    ])
      expect(stored).not.toContain(secret);
    const kept = JSON.parse(Buffer.from(record.data_base64, 'base64').toString());
    expect(kept['authorization']).toBe(`[redacted sha256:${fp('an-arbitrary-bootstrap-key-of-32-characters')}]`);
    expect(kept['parent_token']).toBe(`[redacted sha256:${fp(capability)}]`);
    expect(kept['requested_tokens']).toBe(5);
    expect(kept['server_id']).toContain('tally_key_0123456789abcdef_');
    expect(record.redacted).toEqual([
      '$.admission_proof',
      '$.authorization',
      '$.nested[0].note',
      '$.parent_token',
      '$.request_id',
      '$.server_id',
    ]);
    expect(record.headers['Tally-Command-Id']).toEqual(['cmd-1']);
  });
});
