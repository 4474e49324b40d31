// Proves the proof-of-possession check of ADR 0011 on its own: a request signed with the
// subject key over @method, @path and content-digest passes once; a replay, a changed
// body, a changed path, another key, a stale or future created time and a missing part fail.
import { describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import {
  LayeredReplayLedger,
  MemoryReplayLedger,
  SubjectSignatures,
  subjectSignatureHeaders,
  type SignedRequest,
} from '../src/index.js';

const subject = generateKeyPairSync('ed25519');
const subjectX = subject.publicKey.export({ format: 'jwk' }).x!;

function verifier(skewSeconds = 30, nowMs = () => Date.now()) {
  return new SubjectSignatures({ skewSeconds, replay: new MemoryReplayLedger(1_000, nowMs), nowMs });
}

async function signed(body: string, path = '/v1/admissions', extra: { createdMs?: number } = {}) {
  const headers = await subjectSignatureHeaders({
    method: 'POST',
    path,
    body,
    privateKey: subject.privateKey,
    ...extra,
  });
  return { method: 'POST', originalUrl: path, headers, rawBody: Buffer.from(body) } satisfies SignedRequest;
}

describe('Issue 8: RFC 9421 signatures by the subject key', () => {
  it('Issue 8: a correct signature passes once, and the same signature again is a replay', async () => {
    const v = verifier();
    const req = await signed('{"a":1}');
    expect(await v.verify(req, subjectX)).toBeUndefined();
    expect((await v.verify(req, subjectX))?.code).toBe('signature_replayed');
  });

  it('Issue 8: a body that differs from its Content-Digest is refused', async () => {
    const req = await signed('{"a":1}');
    expect((await verifier().verify({ ...req, rawBody: Buffer.from('{"a":2}') }, subjectX))?.code).toBe(
      'content_digest_mismatch',
    );
  });

  it('Issue 8: another path, another key, or no signature is refused', async () => {
    const req = await signed('{}');
    expect((await verifier().verify({ ...req, originalUrl: '/v1/work' }, subjectX))?.code).toBe('signature_invalid');
    const other = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
    expect((await verifier().verify(req, other))?.code).toBe('signature_invalid');
    const { signature: _s, ...unsigned } = req.headers;
    expect((await verifier().verify({ ...req, headers: unsigned }, subjectX))?.code).toBe('signature_required');
  });

  it('Issue 8: created outside the skew, either way, is refused', async () => {
    const v = verifier(30);
    expect((await v.verify(await signed('{}', '/p', { createdMs: Date.now() - 60_000 }), subjectX))?.code).toBe(
      'signature_expired',
    );
    expect((await v.verify(await signed('{}', '/p', { createdMs: Date.now() + 60_000 }), subjectX))?.code).toBe(
      'signature_expired',
    );
    expect(await v.verify(await signed('{}', '/p', { createdMs: Date.now() - 20_000 }), subjectX)).toBeUndefined();
  });

  it('Issue 8: the replay memory is bounded: full of live entries it refuses (fail closed), then forgets expired ones', async () => {
    let now = 1_000_000;
    const ledger = new MemoryReplayLedger(2, () => now);
    expect(await ledger.firstUse('a', now + 100)).toBe(true);
    expect(await ledger.firstUse('b', now + 100)).toBe(true);
    expect(await ledger.firstUse('c', now + 100)).toBe('unavailable');
    now += 200;
    expect(await ledger.firstUse('c', now + 100)).toBe(true);
    expect(ledger.size).toBe(1);
  });

  it('Issue 8: the layered ledger refuses what the shared one already saw', async () => {
    const shared = new MemoryReplayLedger(10);
    const a = new LayeredReplayLedger(new MemoryReplayLedger(10), shared);
    const b = new LayeredReplayLedger(new MemoryReplayLedger(10), shared);
    expect(await a.firstUse('x', Date.now() + 1000)).toBe(true);
    expect(await b.firstUse('x', Date.now() + 1000)).toBe(false);
  });
});
