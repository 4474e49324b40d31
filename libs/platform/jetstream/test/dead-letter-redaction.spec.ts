// Proves that a dead letter never keeps a capability token (ADR 0007): every `token`
// string is replaced by its sha256 fingerprint wherever it sits, a body that cannot be
// parsed but names a token is withheld with its size and digest, and anything else is
// kept byte for byte.
import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
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
});
