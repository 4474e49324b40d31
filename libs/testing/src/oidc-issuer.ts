// A real identity provider for tests, as far as Tally sees one: a local HTTP server that
// publishes a JWKS (RFC 7517) at /jwks.json and signs ID/access tokens with jose. Keys can
// be added and dropped while it runs (rotation at the issuer), and it counts the JWKS
// fetches, so a test can tell a cached key from a refetch.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

export interface IssuerKey {
  readonly kid: string;
  readonly alg: string;
  readonly privateKey: CryptoKey;
  readonly jwk: JWK;
}

export interface TokenOptions {
  readonly kid?: string;
  /** Defaults to the issuer's own URL. */
  readonly iss?: string;
  readonly aud?: string;
  readonly sub?: string;
  /** Seconds from now; negative for a token already expired. */
  readonly expiresInSeconds?: number;
  /** Seconds from now for `nbf`. */
  readonly notBeforeInSeconds?: number;
  readonly claims?: JWTPayload;
  /** Sign with a key that is not (or no longer) published. */
  readonly key?: IssuerKey;
}

export class LocalOidcIssuer {
  private readonly published = new Map<string, IssuerKey>();
  private fetches = 0;

  private constructor(
    private readonly server: Server,
    readonly url: string,
    readonly audience: string,
  ) {}

  static async start(audience = 'tally-api'): Promise<LocalOidcIssuer> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const issuer = new LocalOidcIssuer(server, `http://127.0.0.1:${port}`, audience);
    server.on('request', (req, res) => {
      if (req.method !== 'GET' || req.url !== '/jwks.json') return void res.writeHead(404).end();
      issuer.fetches += 1;
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(issuer.jwks()));
    });
    return issuer;
  }

  get jwksUrl(): string {
    return `${this.url}/jwks.json`;
  }

  /** How many times the JWKS was fetched. */
  get jwksFetches(): number {
    return this.fetches;
  }

  /** A fresh key pair; published unless told otherwise. */
  async newKey(alg = 'ES256', publish = true): Promise<IssuerKey> {
    const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
    const kid = `kid-${randomBytes(6).toString('hex')}`;
    const key: IssuerKey = { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
    if (publish) this.published.set(kid, key);
    return key;
  }

  publish(key: IssuerKey): void {
    this.published.set(key.kid, key);
  }

  unpublish(kid: string): void {
    this.published.delete(kid);
  }

  jwks(): { keys: JWK[] } {
    return { keys: [...this.published.values()].map((k) => k.jwk) };
  }

  /** A signed JWT by the named (or the first published) key, valid for an hour unless told otherwise. */
  async token(options: TokenOptions = {}): Promise<string> {
    const key = options.key ?? (options.kid ? this.published.get(options.kid) : this.published.values().next().value);
    if (!key) throw new Error('the issuer has no key to sign with');
    const now = Math.floor(Date.now() / 1000);
    const jwt = new SignJWT({ ...options.claims })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
      .setIssuer(options.iss ?? this.url)
      .setAudience(options.aud ?? this.audience)
      .setSubject(options.sub ?? 'person-1')
      .setIssuedAt(now)
      .setExpirationTime(now + (options.expiresInSeconds ?? 3600));
    if (options.notBeforeInSeconds !== undefined) jwt.setNotBefore(now + options.notBeforeInSeconds);
    return jwt.sign(key.privateKey);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
