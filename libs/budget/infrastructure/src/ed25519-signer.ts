// The authority's Ed25519 signer (node's own crypto) over canonical JSON. The key comes
// from config (PEM, or a raw 32-byte seed in base64url), or, for the local stack only, is
// generated once and persisted to a file so that receipts keep verifying across restarts.
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  verify,
  type KeyObject,
} from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { canonicalJson } from './canonical-json.js';

/** PKCS#8 DER prefix of an Ed25519 private key; the 32-byte seed follows it. */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SEED_BYTES = 32;

export interface PublicKeyDescription {
  readonly key_id: string;
  readonly algorithm: 'ed25519';
  readonly public_key: string;
}

export class Ed25519Signer {
  readonly keyId: string;
  private readonly publicKey: KeyObject;
  private readonly publicKeyRaw: Buffer;

  private constructor(private readonly privateKey: KeyObject) {
    this.publicKey = createPublicKey(privateKey);
    this.publicKeyRaw = rawPublicKey(this.publicKey);
    // The key id is derived from the public key, so it is stable for a key and differs between keys.
    this.keyId = `ed25519-${createHash('sha256').update(this.publicKeyRaw).digest('base64url').slice(0, 16)}`;
  }

  static fromPem(pem: string): Ed25519Signer {
    const key = createPrivateKey(pem);
    if (key.asymmetricKeyType !== 'ed25519')
      throw new Error(`signing key must be ed25519, got ${String(key.asymmetricKeyType)}`);
    return new Ed25519Signer(key);
  }

  static fromSeed(seedBase64Url: string): Ed25519Signer {
    const seed = Buffer.from(seedBase64Url, 'base64url');
    if (seed.length !== SEED_BYTES) throw new Error(`an ed25519 seed is ${SEED_BYTES} bytes, got ${seed.length}`);
    return new Ed25519Signer(
      createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' }),
    );
  }

  static generate(): Ed25519Signer {
    return new Ed25519Signer(generateKeyPairSync('ed25519').privateKey);
  }

  /** Local stack only: reads the PEM at `file`, or creates it (mode 0600) on first start. */
  static loadOrCreate(file: string): Ed25519Signer {
    if (existsSync(file)) return Ed25519Signer.fromPem(readFileSync(file, 'utf8'));
    const signer = Ed25519Signer.generate();
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, signer.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), {
      mode: 0o600,
      flag: 'wx',
    });
    return signer;
  }

  /** With `keyId`, the caller names the key its body claims; any other than this one is a bug, not a fallback. */
  sign(value: unknown, keyId?: string): string {
    if (keyId !== undefined && keyId !== this.keyId) throw new Error(`this signer holds ${this.keyId}, not ${keyId}`);
    return sign(null, Buffer.from(canonicalJson(value)), this.privateKey).toString('base64url');
  }

  /** The signature by `keyId` when this is that key, else undefined (the projection's re-sign check). */
  signAs(keyId: string, value: unknown): string | undefined {
    return keyId === this.keyId ? this.sign(value) : undefined;
  }

  verify(value: unknown, signature: string, keyId: string): boolean {
    if (keyId !== this.keyId) return false;
    return verify(null, Buffer.from(canonicalJson(value)), this.publicKey, Buffer.from(signature, 'base64url'));
  }

  /** Base64url (no padding) of the raw 32-byte public key, as GET /v1/keys serves it. */
  publicKeyBase64Url(): string {
    return this.publicKeyRaw.toString('base64url');
  }

  publicKeys(): PublicKeyDescription[] {
    return [{ key_id: this.keyId, algorithm: 'ed25519', public_key: this.publicKeyBase64Url() }];
  }
}

/** Verifies a signature with a published raw public key: what an auditor does. */
export function verifyWithPublicKey(value: unknown, signature: string, publicKeyBase64Url: string): boolean {
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKeyBase64Url }, format: 'jwk' });
  return verify(null, Buffer.from(canonicalJson(value)), key, Buffer.from(signature, 'base64url'));
}

function rawPublicKey(key: KeyObject): Buffer {
  const jwk = key.export({ format: 'jwk' });
  if (typeof jwk.x !== 'string') throw new Error('ed25519 public key has no x coordinate');
  return Buffer.from(jwk.x, 'base64url');
}
