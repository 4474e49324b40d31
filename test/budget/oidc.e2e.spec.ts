// Proves issue 8's OIDC sign-in against the real services: a local identity provider over real HTTP signs JWTs
// with jose, and the budget-authority (and the orchestrator) accept exactly the valid ones, follow a key rotated
// at the issuer, scope them to the tenant and role in their claims, and refuse to boot on a bad OIDC setting.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalOidcIssuer, ServiceProcess } from '@tally/testing';
import { AuthorityStack, eventually } from './support/authority-stack.js';

const COOLDOWN_MS = 3_000;

describe('issue 8 OIDC bearer JWTs (real authority, real JWKS server)', () => {
  let idp: LocalOidcIssuer;
  let stack: AuthorityStack;
  let dir: string;
  let orchestrator: ServiceProcess | undefined;

  const oidcConfig = (extra: Record<string, unknown> = {}) => ({
    auth: {
      oidc: [
        {
          issuer: idp.url,
          audience: idp.audience,
          jwks_url: idp.jwksUrl,
          tenant_claim: 'https://tally.example/tenant',
          role_claim: 'groups',
          role_map: { 'tally-admins': 'admin', 'tally-issuers': 'issuer', 'tally-readers': 'reader' },
          clock_skew_seconds: 30,
          jwks_cooldown_ms: COOLDOWN_MS,
          ...extra,
        },
      ],
    },
  });

  const writeConfig = (name: string, config: unknown): string => {
    const path = join(dir, name);
    writeFileSync(path, JSON.stringify(config));
    return path;
  };

  const claims = (tenant: string, group: string) => ({ 'https://tally.example/tenant': tenant, groups: [group] });

  const get = async (path: string, jwt: string, url = stack.url) => {
    const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${jwt}` } });
    return { status: res.status, authenticate: res.headers.get('www-authenticate'), body: await res.text() };
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tally-oidc-'));
    idp = await LocalOidcIssuer.start('tally-api');
    await idp.newKey('ES256');
    stack = await AuthorityStack.create('oidc', {
      faultInjection: false,
      env: { TALLY_CONFIG: writeConfig('authority.json', oidcConfig()) },
    });
    await stack.start();
    await stack.ok('POST', '/v1/tenants', { id: 'acme' });
  }, 180_000);

  afterAll(async () => {
    await orchestrator?.stop();
    await stack?.dispose();
    await idp?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('issue 8 OIDC: a valid reader token reads its own tenant (200) and may not do what only an admin may (403)', async () => {
    const jwt = await idp.token({ claims: claims('default', 'tally-readers') });
    const own = await get('/v1/tenants/default', jwt);
    expect(own.status).toBe(200);
    expect(JSON.parse(own.body)).toMatchObject({ id: 'default' });
    expect((await get('/v1/tenants', jwt)).status).toBe(403);
    // Another tenant's resource is the same 404 as a missing one.
    expect((await get('/v1/tenants/acme', jwt)).status).toBe(404);
  });

  it('issue 8 OIDC: an expired token is a 401 with WWW-Authenticate: Bearer', async () => {
    const jwt = await idp.token({ claims: claims('default', 'tally-readers'), expiresInSeconds: -120 });
    const res = await get('/v1/tenants/default', jwt);
    expect(res.status).toBe(401);
    expect(res.authenticate).toMatch(/^Bearer/);
    expect(res.body).toMatch(/expired/);
  });

  it('issue 8 OIDC: a token for another audience is a 401', async () => {
    const jwt = await idp.token({ claims: claims('default', 'tally-readers'), aud: 'some-other-api' });
    expect((await get('/v1/tenants/default', jwt)).status).toBe(401);
  });

  it('issue 8 OIDC: a token of an issuer that is not configured is a 401', async () => {
    const other = await LocalOidcIssuer.start('tally-api');
    try {
      await other.newKey('ES256');
      const jwt = await other.token({ claims: claims('default', 'tally-admins') });
      expect((await get('/v1/tenants/default', jwt)).status).toBe(401);
      // Nor does naming the configured issuer help: its keys did not sign the token.
      const forged = await other.token({ claims: claims('default', 'tally-admins'), iss: idp.url });
      expect((await get('/v1/tenants/default', forged)).status).toBe(401);
    } finally {
      await other.close();
    }
  });

  it('issue 8 OIDC: a token by a kid the issuer never published is a 401, and does not hammer the issuer', async () => {
    const stranger = await idp.newKey('ES256', false);
    const before = idp.jwksFetches;
    const startedMs = Date.now();
    for (let i = 0; i < 10; i++) {
      const jwt = await idp.token({ claims: claims('default', 'tally-admins'), key: stranger });
      expect((await get('/v1/tenants/default', jwt)).status).toBe(401);
    }
    // One refetch per cooldown at most, however many unknown kids arrive.
    expect(idp.jwksFetches - before).toBeLessThanOrEqual(1 + Math.floor((Date.now() - startedMs) / COOLDOWN_MS));
  });

  it('issue 8 OIDC: a token from a kid rotated at the issuer is accepted after the JWKS refetch', async () => {
    const reader = claims('default', 'tally-readers');
    expect((await get('/v1/tenants/default', await idp.token({ claims: reader }))).status).toBe(200);
    const next = await idp.newKey('RS256');
    idp.unpublish(idp.jwks().keys[0]!.kid!);
    const rotated = await idp.token({ claims: reader, kid: next.kid });
    const fetchesBefore = idp.jwksFetches;
    const accepted = await eventually(
      () => get('/v1/tenants/default', rotated),
      (res) => res.status === 200,
      COOLDOWN_MS * 4,
      'the rotated key accepted',
    );
    expect(accepted.status).toBe(200);
    expect(idp.jwksFetches).toBeGreaterThan(fetchesBefore);
  });

  it('issue 8 OIDC: a role claim that maps to no Tally role is a 401, whatever else the token says', async () => {
    for (const group of ['tally-superusers', 'admin']) {
      const jwt = await idp.token({ claims: claims('default', group) });
      const res = await get('/v1/tenants/default', jwt);
      expect(res.status).toBe(401);
      expect(res.body).toMatch(/role/);
    }
  });

  it('issue 8 OIDC: a token naming a tenant the ledger never created is a 401', async () => {
    const jwt = await idp.token({ claims: claims('no-such-tenant', 'tally-admins') });
    expect((await get('/v1/tenants/default', jwt)).status).toBe(401);
  });

  it('issue 8 OIDC: an admin token acts in every tenant', async () => {
    const jwt = await idp.token({ claims: claims('acme', 'tally-admins') });
    expect((await get('/v1/tenants/default', jwt)).status).toBe(200);
    expect((await get('/v1/tenants/acme', jwt)).status).toBe(200);
    const list = await get('/v1/tenants', jwt);
    expect(list.status).toBe(200);
    expect(JSON.parse(list.body).tenants.map((t: { id: string }) => t.id)).toEqual(
      expect.arrayContaining(['default', 'acme']),
    );
  });

  it('issue 8 OIDC: the orchestrator verifies the same tokens against the same issuer', async () => {
    orchestrator = await ServiceProcess.start({
      service: 'agent-orchestrator',
      readyTimeoutMs: 120_000,
      env: {
        ...stack.env,
        TALLY_CONFIG: writeConfig('orchestrator.json', oidcConfig()),
        TALLY_SQLITE_PATH: join(dir, 'orchestrator.sqlite'),
        TALLY__ORCHESTRATOR__BUDGET_MODE: 'unmetered',
      },
    });
    const reader = await idp.token({ claims: claims('acme', 'tally-readers') });
    // Accepted and scoped: a unit it cannot see is a 404, not a 401.
    expect((await get('/v1/work/none-such', reader, orchestrator.url)).status).toBe(404);
    const expired = await idp.token({ claims: claims('acme', 'tally-readers'), expiresInSeconds: -120 });
    expect((await get('/v1/work/none-such', expired, orchestrator.url)).status).toBe(401);
  }, 180_000);

  it('issue 8 OIDC: a bad OIDC setting stops the boot naming the setting', async () => {
    const both = oidcConfig({ jwks_file: join(dir, 'jwks.json') });
    const missing = oidcConfig({ jwks_url: undefined, jwks_file: join(dir, 'missing-jwks.json') });
    // The other rules (https off loopback, duplicates, roles) are the config loader's, proven in config.spec.ts.
    const cases: [unknown, RegExp][] = [
      [both, /auth\.oidc\.0\.jwks_url: set exactly one of jwks_url and jwks_file/],
      [missing, /auth\.oidc\.0\.jwks_file: cannot read .*missing-jwks\.json: ENOENT/],
    ];
    const booted = await Promise.all(
      cases.map(([config], index) =>
        ServiceProcess.start({
          service: 'budget-authority',
          env: { ...stack.env, TALLY_CONFIG: writeConfig(`bad-${index}.json`, config) },
          waitReady: false,
        }),
      ),
    );
    for (const [index, svc] of booted.entries()) {
      expect(await svc.waitExit(150_000)).toBe(78);
      expect(svc.logs()).toMatch(cases[index]![1]);
    }
  }, 300_000);
});
