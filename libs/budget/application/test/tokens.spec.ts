// Proves that a capability verified once is not verified again (the Ed25519 check was the
// largest single cost of an Admit after the projection), and that remembering it never
// lets anything through that would not verify: a different token, a forged signature, a
// token of another signer, or a token opened without `remember`.
import { describe, expect, it } from '@jest/globals';
import { Ed25519Signer } from '@tally/budget-infrastructure';
import { openToken, sealToken, VERIFIED_TOKENS_MAX, type Signer } from '@tally/budget-application';

/** A real signer that counts its verifications. */
function counting(signer: Ed25519Signer): Signer & { verifications: number } {
  const counted = {
    verifications: 0,
    keyId: signer.keyId,
    sign: (value: unknown) => signer.sign(value),
    verify: (value: unknown, signature: string, keyId: string) => (
      counted.verifications++,
      signer.verify(value, signature, keyId)
    ),
    publicKeys: () => signer.publicKeys(),
  };
  return counted;
}

describe('capability tokens', () => {
  it('a remembered capability is verified once; forged, foreign and unremembered tokens are verified every time and refused when bad', () => {
    const signer = counting(Ed25519Signer.generate());
    const claims = { id: 'cap-1', key_id: signer.keyId, expires_at_ms: 1 };
    const token = sealToken(signer, 'c1', claims);
    expect(openToken(signer, 'c1', token, true)).toEqual(claims);
    expect(openToken(signer, 'c1', token, true)).toEqual(claims);
    expect(signer.verifications).toBe(1);

    const [prefix, body] = token.split('.');
    const forged = `${prefix}.${body}.${sealToken(signer, 'c1', { ...claims, id: 'other' }).split('.')[2]}`;
    expect(openToken(signer, 'c1', forged, true)).toBeUndefined();
    expect(openToken(signer, 'c1', forged, true)).toBeUndefined();
    expect(signer.verifications).toBe(3);

    const stranger = counting(Ed25519Signer.generate());
    expect(openToken(stranger, 'c1', token, true)).toBeUndefined();
    expect(openToken(signer, 'n1', token, true)).toBeUndefined();

    const nonce = sealToken(signer, 'n1', { nonce_id: 'n', key_id: signer.keyId });
    openToken(signer, 'n1', nonce);
    openToken(signer, 'n1', nonce);
    expect(signer.verifications).toBe(5);
  });

  it('the remembered tokens are bounded: past the bound the oldest is verified again', () => {
    const signer = counting(Ed25519Signer.generate());
    const tokens = Array.from({ length: VERIFIED_TOKENS_MAX + 1 }, (_, i) =>
      sealToken(signer, 'c1', { id: `cap-${i}`, key_id: signer.keyId }),
    );
    for (const token of tokens) openToken(signer, 'c1', token, true);
    expect(signer.verifications).toBe(tokens.length);
    openToken(signer, 'c1', tokens[tokens.length - 1]!, true);
    expect(signer.verifications).toBe(tokens.length);
    openToken(signer, 'c1', tokens[0]!, true);
    expect(signer.verifications).toBe(tokens.length + 1);
  });
});
