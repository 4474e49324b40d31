// Credentials for the end-to-end suites: one bootstrap admin key per test process (every
// stack started from it gets it as TALLY_ADMIN_KEY), and a token mint for suites that run
// the orchestrator without an authority. The mint registers its own signing key in the
// namespace's directory, exactly as an authority replica registers its key at boot, so the
// orchestrator verifies the tokens it seals against the published keys like any others.
import { generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { canonicalJson } from '@tally/budget-infrastructure';
import { tallyNames } from '@tally/contracts';
import { directoryEventRegistry } from '@tally/directory-service';
import { JetStreamEventStore } from '@tally/platform-jetstream';

export const TEST_ADMIN_KEY = `tally_admin_test_${randomBytes(24).toString('base64url')}`;

export const adminHeaders = (): Record<string, string> => ({ authorization: `Bearer ${TEST_ADMIN_KEY}` });

export interface MintedClaims {
  readonly id?: string;
  readonly tenant_id?: string;
  readonly expires_at_ms?: number;
  /** The subject's public key (base64url raw Ed25519); a fresh one otherwise. */
  readonly subject_public_key?: string;
  readonly bind?: 'subject_key';
}

export class TokenMint {
  private constructor(
    private readonly privateKey: KeyObject,
    readonly keyId: string,
  ) {}

  /** Registers a fresh signing key in the namespace's directory stream (which must exist). */
  static async open(natsUrl: string, namespace: string): Promise<TokenMint> {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const x = publicKey.export({ format: 'jwk' }).x!;
    const keyId = `test-${randomBytes(6).toString('hex')}`;
    const names = tallyNames(namespace);
    const nc = await connect({ servers: natsUrl, timeout: 5_000 });
    try {
      const store = new JetStreamEventStore(jetstream(nc), await jetstreamManager(nc), {
        stream: names.directoryEventsStream,
        registry: directoryEventRegistry(),
        publishTimeoutMs: 5_000,
        loadEventsMax: 100_000,
        loadIdleTimeoutMs: 5_000,
      });
      const subject = names.directorySigningKeysSubject;
      const { lastSequence } = await store.load(subject);
      const at = Date.now();
      await store.append(
        subject,
        [
          {
            eventId: `signing-key:${keyId}`,
            type: 'SigningKeyRegistered',
            aggregateId: 'signing-keys',
            occurredAt: new Date(at).toISOString(),
            payload: { key_id: keyId, algorithm: 'ed25519', public_key: x, at_ms: at },
          },
        ],
        lastSequence,
      );
    } finally {
      await nc.close();
    }
    return new TokenMint(privateKey, keyId);
  }

  /** A capability token (c1.<claims>.<signature>) of the default tenant unless told otherwise. */
  seal(claims: MintedClaims = {}): string {
    const id = claims.id ?? `cap_test${randomBytes(8).toString('hex')}`;
    const body = {
      id,
      root_id: id.split('--')[0],
      ...(claims.tenant_id === undefined ? {} : { tenant_id: claims.tenant_id }),
      subject_public_key:
        claims.subject_public_key ?? generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!,
      ...(claims.bind === undefined ? {} : { bind: claims.bind }),
      issued_at_ms: Date.now(),
      expires_at_ms: claims.expires_at_ms ?? Date.now() + 3_600_000,
      grants: [],
      key_id: this.keyId,
    };
    const signature = sign(null, Buffer.from(canonicalJson(body)), this.privateKey).toString('base64url');
    return `c1.${Buffer.from(JSON.stringify(body)).toString('base64url')}.${signature}`;
  }
}

/** Waits until a service accepts `token` (its directory view has the mint's key). */
export async function untilAccepted(url: string, token: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const res = await fetch(`${url}/v1/work/none-such`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 401) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} did not accept the minted token within ${timeoutMs} ms`);
}
