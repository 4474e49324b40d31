// `tally keys generate --out DIR` (commands/keys.ts): a new signing key written offline into
// a keyring directory. Here, not in the command definition, so `tally` loads the budget
// infrastructure only when this command runs.
import { Ed25519Signer, SigningKeyring } from '@tally/budget-infrastructure';

export interface GeneratedKey {
  readonly key_id: string;
  readonly algorithm: 'ed25519';
  readonly public_key: string;
  readonly file: string;
}

export function generateKey(out: string): GeneratedKey {
  // The throwaway boot key is never written; only the new key goes to the directory.
  const key = SigningKeyring.open(Ed25519Signer.generate(), out).generate();
  return { key_id: key.keyId, algorithm: 'ed25519', public_key: key.publicKeyBase64Url(), file: `${key.keyId}.pem` };
}
