// Proves ADR 0049 on the verifier alone: a spent signature stays spent however its headers are relabelled or padded with members, and a captured request cannot be re-sent with another query, Idempotency-Key, fallback list or session.
import { describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import {
  dictionaryMembers,
  MemoryReplayLedger,
  SubjectSignatures,
  subjectSignatureHeaders,
  type SignedRequest,
} from '../src/index.js';

const subject = generateKeyPairSync('ed25519');
const subjectX = subject.publicKey.export({ format: 'jwk' }).x!;

function verifier() {
  return new SubjectSignatures({ skewSeconds: 30, replay: new MemoryReplayLedger(1_000) });
}

/** A signed request as a client sends it: its own headers beside the signature's. */
async function signed(path: string, own: Record<string, string> = {}, keyId?: string): Promise<SignedRequest> {
  const body = '{"request_id":"r-1"}';
  const signature = await subjectSignatureHeaders({
    method: 'POST',
    path,
    body,
    headers: own,
    privateKey: subject.privateKey,
    ...(keyId === undefined ? {} : { keyId }),
  });
  return { method: 'POST', originalUrl: path, headers: { ...own, ...signature }, rawBody: Buffer.from(body) };
}

function withHeaders(req: SignedRequest, changed: Record<string, string | undefined>): SignedRequest {
  return { ...req, headers: { ...req.headers, ...changed } };
}

const text = (req: SignedRequest, name: string) => String(req.headers[name]);

describe('ADR 0049: a signature is one member and covers what the route reads', () => {
  it('ADR 0049 a spent signature relabelled in both headers (sig= to x=) is still a replay', async () => {
    const v = verifier();
    const req = await signed('/v1/admissions');
    expect(await v.verify(req, subjectX)).toBeUndefined();
    const relabelled = withHeaders(req, {
      signature: text(req, 'signature').replace(/^sig=/, 'x='),
      'signature-input': text(req, 'signature-input').replace(/^sig=/, 'x='),
    });
    expect((await v.verify(relabelled, subjectX))?.code).toBe('signature_replayed');
  });

  it('ADR 0049 an extra member in Signature or Signature-Input, a repeated label or two labels is refused', async () => {
    const req = await signed('/v1/admissions');
    const sig = text(req, 'signature');
    const input = text(req, 'signature-input');
    const variants: Record<string, string>[] = [
      { signature: `${sig}, junk=:AAAA:` },
      { signature: `junk=:AAAA:, ${sig}` },
      { signature: `${sig}, ${sig}` },
      { 'signature-input': `${input}, junk=("@method");created=1` },
      { signature: sig.replace(/^sig=/, 'x=') },
      { signature: `${sig};x=1` },
    ];
    for (const changed of variants) {
      // A fresh ledger each time: the refusal is the shape, not a replay.
      const refusal = await verifier().verify(withHeaders(req, changed), subjectX);
      expect(refusal?.code).toBe('signature_invalid');
    }
    expect(await verifier().verify(req, subjectX)).toBeUndefined();
    // One member still, however its quoted parameters are spelled.
    expect(dictionaryMembers('sig=("@method");keyid="a,b";created=1')).toEqual([
      { label: 'sig', value: '("@method");keyid="a,b";created=1' },
    ]);
    expect(await verifier().verify(await signed('/v1/admissions', {}, 'a,b'), subjectX)).toBeUndefined();
  });

  it('ADR 0049 a captured request re-sent with another Idempotency-Key, x-tally-fallbacks or session is refused', async () => {
    const own = { 'idempotency-key': 'k-1', 'x-tally-fallbacks': 'scripted/a', 'x-tally-session-id': 's-1' };
    // Signed as clients signed before: over the base only, the headers sent beside it.
    const base = await signed('/v1/chat/completions');
    for (const changed of [
      { 'idempotency-key': 'k-2' },
      { 'x-tally-fallbacks': 'scripted/b,scripted/c' },
      { 'x-tally-session-id': 's-2' },
    ]) {
      const refusal = await verifier().verify(withHeaders(base, { ...own, ...changed }), subjectX);
      expect(refusal?.code).toBe('signature_invalid');
    }
    // Signed over them, the request passes, and any change to one of them breaks its signature.
    const covered = await signed('/v1/chat/completions', own);
    for (const changed of [
      { 'idempotency-key': 'k-2' },
      { 'x-tally-fallbacks': 'scripted/b' },
      { 'idempotency-key': undefined },
    ])
      expect((await verifier().verify(withHeaders(covered, changed), subjectX))?.code).toBe('signature_invalid');
    expect(await verifier().verify(covered, subjectX)).toBeUndefined();
  });

  it('ADR 0049 a header the signature leaves out is refused, and the refusal names the components to sign', async () => {
    const bare = await signed('/v1/work');
    const keyed = await verifier().verify(withHeaders(bare, { 'idempotency-key': 'k-new' }), subjectX);
    expect(keyed?.code).toBe('signature_invalid');
    expect(keyed?.message).toMatch(/must cover idempotency-key/);
    expect(keyed?.components).toEqual(['@method', '@path', 'content-digest', 'idempotency-key']);
    const ceiling = await verifier().verify(withHeaders(bare, { 'x-tally-dispatch-ceiling': '5' }), subjectX);
    expect(ceiling?.message).toMatch(/must cover x-tally-dispatch-ceiling/);
  });

  it('ADR 0049 a query string must be covered by @query: added, changed or dropped, the request is refused', async () => {
    const bare = await signed('/v1/work');
    const added = await verifier().verify({ ...bare, originalUrl: '/v1/work?unit=2' }, subjectX);
    expect(added?.message).toMatch(/must cover @query/);
    const req = await signed('/v1/work?unit=1');
    for (const target of ['/v1/work?unit=2', '/v1/work'])
      expect((await verifier().verify({ ...req, originalUrl: target }, subjectX))?.code).toBe('signature_invalid');
    expect(await verifier().verify(req, subjectX)).toBeUndefined();
  });

  it('ADR 0049 a signature spelled in non-canonical base64 or of the wrong length is refused', async () => {
    const req = await signed('/v1/admissions');
    const b64 = /^sig=:([^:]*):$/.exec(text(req, 'signature'))![1]!;
    // The last character carries two unused bits: setting them spells the same bytes differently.
    const last = b64.at(-3)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const sibling = alphabet[alphabet.indexOf(last) ^ 1]!;
    const respelled = `sig=:${b64.slice(0, -3)}${sibling}==:`;
    expect(Buffer.from(b64, 'base64').equals(Buffer.from(respelled.slice(5, -1), 'base64'))).toBe(true);
    expect((await verifier().verify(withHeaders(req, { signature: respelled }), subjectX))?.code).toBe(
      'signature_invalid',
    );
    expect((await verifier().verify(withHeaders(req, { signature: 'sig=:AAAA:' }), subjectX))?.code).toBe(
      'signature_invalid',
    );
  });
});
