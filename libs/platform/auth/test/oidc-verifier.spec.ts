// Proves the OIDC verifier against a real local JWKS server: it accepts only tokens of a configured issuer, for
// the configured audience, unexpired within the clock skew, signed asymmetrically by a published key (following
// rotation at the issuer, with a bounded refetch), and with a tenant and a Tally role in the configured claims.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { base64url, SignJWT } from 'jose';
import { LocalOidcIssuer } from '@tally/testing';
import {
  isRefusal,
  JoseOidcVerifier,
  knownTenantsOnly,
  type OidcIssuerSettings,
  type OperatorPrincipal,
  type Refusal,
} from '../src/index.js';

const settingsOf = (issuer: LocalOidcIssuer, extra: Partial<OidcIssuerSettings> = {}): OidcIssuerSettings => ({
  issuer: issuer.url,
  audience: issuer.audience,
  tenant_claim: 'tenant',
  role_claim: 'role',
  clock_skew_seconds: 30,
  jwks_cache_ms: 600_000,
  jwks_cooldown_ms: 30_000,
  jwks_timeout_ms: 2_000,
  ...extra,
});

const reader = { tenant: 'acme', role: 'reader' };

function refused(result: OperatorPrincipal | Refusal): Refusal {
  if (!isRefusal(result)) throw new Error(`expected a refusal, got ${JSON.stringify(result)}`);
  return result;
}

describe('issue 8 OIDC verifier (jose, real JWKS server)', () => {
  let idp: LocalOidcIssuer;
  let verifier: JoseOidcVerifier;

  beforeAll(async () => {
    idp = await LocalOidcIssuer.start();
    await idp.newKey('ES256');
    verifier = new JoseOidcVerifier([{ settings: settingsOf(idp), jwks: { url: idp.jwksUrl } }]);
  });
  afterAll(() => idp.close());

  it('issue 8 OIDC: a valid token becomes an operator of its tenant and role, named <iss>#<sub>', async () => {
    const result = await verifier.verify(await idp.token({ claims: reader, sub: 'alice' }));
    expect(result).toEqual({
      kind: 'operator',
      role: 'reader',
      tenant_id: 'acme',
      subject: `${idp.url}#alice`,
      via: 'oidc',
    });
  });

  it('issue 8 OIDC: an expired token is refused as expired; one within the clock skew still verifies', async () => {
    expect(refused(await verifier.verify(await idp.token({ claims: reader, expiresInSeconds: -120 }))).refused).toBe(
      'expired',
    );
    expect(isRefusal(await verifier.verify(await idp.token({ claims: reader, expiresInSeconds: -10 })))).toBe(false);
    const early = refused(await verifier.verify(await idp.token({ claims: reader, notBeforeInSeconds: 120 })));
    expect(early.message).toMatch(/nbf/);
  });

  it('issue 8 OIDC: a token for another audience is refused naming the aud claim', async () => {
    const result = refused(await verifier.verify(await idp.token({ claims: reader, aud: 'another-api' })));
    expect(result).toMatchObject({ refused: 'invalid', message: expect.stringMatching(/aud/) });
  });

  it('issue 8 OIDC: a token of an issuer that is not configured is refused without fetching anything', async () => {
    const before = idp.jwksFetches;
    const result = refused(await verifier.verify(await idp.token({ claims: reader, iss: 'https://evil.example' })));
    expect(result.refused).toBe('unknown');
    expect(idp.jwksFetches).toBe(before);
  });

  it('issue 8 OIDC: a token by an unpublished kid is refused, and a burst of them fetches the JWKS at most once', async () => {
    const stranger = await idp.newKey('ES256', false);
    await verifier.verify(await idp.token({ claims: reader })); // keys cached now
    const before = idp.jwksFetches;
    for (let i = 0; i < 20; i++) {
      const result = refused(await verifier.verify(await idp.token({ claims: reader, key: stranger })));
      expect(result.refused).toBe('unknown');
    }
    expect(idp.jwksFetches - before).toBeLessThanOrEqual(1);
  });

  it('issue 8 OIDC: a kid rotated at the issuer is accepted after the refetch, not before the cooldown ends', async () => {
    const cooldownMs = 1_500;
    const rotating = await LocalOidcIssuer.start();
    try {
      await rotating.newKey('RS256');
      const v = new JoseOidcVerifier([
        { settings: settingsOf(rotating, { jwks_cooldown_ms: cooldownMs }), jwks: { url: rotating.jwksUrl } },
      ]);
      const first = await rotating.token({ claims: reader });
      const fetchStartMs = Date.now();
      expect(isRefusal(await v.verify(first))).toBe(false);
      const fetchedAtMs = Date.now();
      const next = await rotating.newKey('EdDSA');
      const token = await rotating.token({ claims: reader, kid: next.kid });
      const early = await v.verify(token);
      // Within the cooldown the cached set is trusted: no refetch, so the new kid is not known yet.
      if (Date.now() - fetchStartMs < cooldownMs) expect(refused(early).refused).toBe('unknown');
      await new Promise((r) => setTimeout(r, cooldownMs - (Date.now() - fetchedAtMs) + 50));
      expect(await v.verify(token)).toMatchObject({ kind: 'operator', role: 'reader' });
      expect(rotating.jwksFetches).toBe(2);
    } finally {
      await rotating.close();
    }
  });

  it('issue 8 OIDC: alg none and HMAC tokens are refused even with a matching kid', async () => {
    const [published] = idp.jwks().keys;
    const claims = {
      iss: idp.url,
      aud: idp.audience,
      sub: 'mallory',
      exp: Math.floor(Date.now() / 1000) + 600,
      ...reader,
    };
    const none = [
      base64url.encode(JSON.stringify({ alg: 'none', kid: published!.kid })),
      base64url.encode(JSON.stringify(claims)),
      '',
    ].join('.');
    expect(refused(await verifier.verify(none)).refused).toBe('invalid');
    const hs = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid: published!.kid })
      .sign(new TextEncoder().encode(JSON.stringify(published)));
    expect(refused(await verifier.verify(hs)).refused).toBe('invalid');
  });

  it('issue 8 OIDC: a token without a Tally role or without a tenant is refused', async () => {
    const noRole = refused(await verifier.verify(await idp.token({ claims: { tenant: 'acme', role: 'superuser' } })));
    expect(noRole.message).toMatch(/role claim/);
    const noTenant = refused(await verifier.verify(await idp.token({ claims: { role: 'admin' } })));
    expect(noTenant.message).toMatch(/tenant claim/);
    const badTenant = await verifier.verify(await idp.token({ claims: { tenant: '../other', role: 'admin' } }));
    expect(refused(badTenant).refused).toBe('invalid');
  });

  it('issue 8 OIDC: role_map maps the identity provider values, and a list claim gives its highest role', async () => {
    const mapped = new JoseOidcVerifier([
      {
        settings: settingsOf(idp, {
          role_claim: 'groups',
          tenant_claim: 'https://tally.example/tenant',
          role_map: { 'tally-admins': 'admin', 'tally-viewers': 'reader' },
        }),
        jwks: { keys: idp.jwks() },
      },
    ]);
    const token = await idp.token({
      claims: { 'https://tally.example/tenant': 'acme', groups: ['staff', 'tally-viewers', 'tally-admins'] },
    });
    expect(await mapped.verify(token)).toMatchObject({ role: 'admin', tenant_id: 'acme' });
    // With a map, only mapped values count: the literal role name is not enough.
    const literal = await idp.token({ claims: { 'https://tally.example/tenant': 'acme', groups: ['admin'] } });
    expect(refused(await mapped.verify(literal)).refused).toBe('invalid');
  });

  it('issue 8 OIDC: keys from a JWKS file verify without any fetch', async () => {
    const fromFile = new JoseOidcVerifier([{ settings: settingsOf(idp), jwks: { keys: idp.jwks() } }]);
    const before = idp.jwksFetches;
    expect(await fromFile.verify(await idp.token({ claims: reader }))).toMatchObject({ kind: 'operator' });
    expect(idp.jwksFetches).toBe(before);
  });

  it('issue 8 OIDC: an issuer whose JWKS cannot be fetched makes the token unverifiable now (503), not valid', async () => {
    const gone = await LocalOidcIssuer.start();
    await gone.newKey();
    const token = await gone.token({ claims: reader });
    await gone.close();
    const v = new JoseOidcVerifier([{ settings: settingsOf(gone), jwks: { url: gone.jwksUrl } }]);
    expect(refused(await v.verify(token)).refused).toBe('unavailable');
  });

  it('issue 8 OIDC: a token naming a tenant the directory does not know is refused', async () => {
    const known = knownTenantsOnly(verifier, (id) => id === 'acme');
    expect(await known.verify(await idp.token({ claims: reader }))).toMatchObject({ tenant_id: 'acme' });
    const other = await known.verify(await idp.token({ claims: { tenant: 'globex', role: 'reader' } }));
    expect(refused(other).refused).toBe('unknown');
  });
});
