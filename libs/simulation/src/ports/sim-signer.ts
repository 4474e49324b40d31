// The simulated signer: the Signer port with one fixed key, signing canonical JSON with
// HMAC-SHA256 instead of Ed25519. It is deterministic like the real one (a replay re-signs
// to the same signature) and an order of magnitude cheaper, which the simulator's step rate
// needs: every receipt and admission proof is signed, every proof and receipt verified.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { PublicKeyDescription, Signer } from '@tally/budget-application';
import { canonicalJson } from '@tally/contracts';

export class SimSigner implements Signer {
  readonly keyId = 'sim-key-1';
  private readonly secret = Buffer.from('the simulation signing key');

  sign(value: unknown, keyId: string = this.keyId): string {
    return createHmac('sha256', this.secret)
      .update(keyId)
      .update('\n')
      .update(canonicalJson(value))
      .digest('base64url');
  }

  verify(value: unknown, signature: string, keyId: string): boolean {
    if (keyId !== this.keyId || typeof signature !== 'string') return false;
    const expected = Buffer.from(this.sign(value, keyId));
    const given = Buffer.from(signature);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  accepts(keyId: string): boolean {
    return keyId === this.keyId;
  }

  publicKeys(): PublicKeyDescription[] {
    return [{ key_id: this.keyId, algorithm: 'ed25519', public_key: 'simulated' }];
  }
}
