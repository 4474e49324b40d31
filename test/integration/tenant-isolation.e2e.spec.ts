// Proves issue 8's tenant isolation under concurrency against the real services: two
// tenants hammer the same endpoints at once (work submissions and reads on the orchestrator,
// issues, admissions and receipt listings on the authority) and neither ever sees a row of
// the other: every read made during the storm, and the final sets, are compared.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { sharedNatsUrl } from '@tally/testing';
import { adminHeaders, TokenMint } from '../support/auth.js';
import { OrchestratorHarness, workBody } from '../orchestrator/orchestrator.harness.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const TENANTS = ['default', 'acme'] as const;
type Tenant = (typeof TENANTS)[number];
/** Units (and capabilities) per tenant; both tenants write and read at the same time. */
const PER_TENANT = 24;
const other = (t: Tenant): Tenant => (t === 'default' ? 'acme' : 'default');

describe('Issue 8: two tenants at once never see each other’s rows', () => {
  const h = new OrchestratorHarness({ prefix: 'isolation' });
  const readers = new Map<Tenant, string>();
  const issuers = new Map<Tenant, string>();

  async function call(base: string, method: string, path: string, credential: string, body?: unknown) {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${credential}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as Json };
  }

  beforeAll(async () => {
    await h.startAuthority();
    await h.start(1);
    const admin = adminHeaders().authorization!.replace(/^Bearer /, '');
    const authority = h.authority!.url;
    expect((await call(authority, 'POST', '/v1/tenants', admin, { id: 'acme' })).status).toBe(201);
    for (const tenant of TENANTS) {
      readers.set(
        tenant,
        (await call(authority, 'POST', `/v1/tenants/${tenant}/keys`, admin, { role: 'reader' })).body['key'],
      );
      issuers.set(
        tenant,
        (await call(authority, 'POST', `/v1/tenants/${tenant}/keys`, admin, { role: 'issuer' })).body['key'],
      );
    }
    await h.eventually('the orchestrator to know the keys', async () => {
      const res = await call(h.url, 'GET', '/v1/work/none', readers.get('acme')!);
      return res.status === 404 ? true : undefined;
    });
  }, 240_000);

  afterAll(async () => {
    await h.dispose();
  });

  it('Issue 8: work units and sessions: concurrent submissions and reads by two tenants stay apart', async () => {
    // Tokens of each tenant, as the authority seals them for a tenant's capability (tenant_id in the claims).
    const mint = await TokenMint.open(sharedNatsUrl(), h.namespace);
    const tokens = new Map(TENANTS.map((t) => [t, mint.seal({ tenant_id: t })]));
    await h.eventually('the orchestrator to accept the minted tokens', async () => {
      const res = await call(h.url, 'GET', '/v1/work/none', tokens.get('acme')!);
      return res.status === 404 ? true : undefined;
    });
    const submitted = new Map<Tenant, string[]>(TENANTS.map((t) => [t, []]));
    const leaks: string[] = [];
    let writing = true;

    const submit = async (tenant: Tenant) => {
      await Promise.all(
        Array.from({ length: PER_TENANT }, async () => {
          const body = workBody();
          const res = await call(h.url, 'POST', '/v1/work', tokens.get(tenant)!, body);
          expect(res.status).toBe(202);
          submitted.get(tenant)!.push(body['work_id'] as string);
        }),
      );
    };
    // While both tenants write, each one's reader keeps reading the other's units as they appear.
    const spy = async (tenant: Tenant) => {
      while (writing) {
        const foreign = submitted.get(other(tenant))!.slice(-4);
        for (const id of foreign) {
          for (const path of [`/v1/work/${id}`, `/v1/work/${id}/receipt`, `/v1/sessions/s-${id}/log`]) {
            const res = await call(h.url, 'GET', path, readers.get(tenant)!);
            if (res.status !== 404) leaks.push(`${tenant} read ${path}: ${res.status}`);
          }
        }
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    const spies = [spy('default'), spy('acme')];
    await Promise.all([submit('default'), submit('acme')]);
    writing = false;
    await Promise.all(spies);
    expect(leaks).toEqual([]);

    // The final sets: each tenant's reader (and token) sees exactly its own units.
    const all = [...submitted.get('default')!, ...submitted.get('acme')!];
    for (const tenant of TENANTS) {
      for (const credential of [readers.get(tenant)!, tokens.get(tenant)!]) {
        const seen = await h.eventually(`${tenant}'s units to be readable`, async () => {
          const statuses = await Promise.all(all.map((id) => call(h.url, 'GET', `/v1/work/${id}`, credential)));
          const visible = all.filter((_, i) => statuses[i]!.status === 200);
          const pending = statuses.some((s) => s.status !== 200 && s.status !== 404);
          return !pending && visible.length >= PER_TENANT ? visible : undefined;
        });
        expect(new Set(seen)).toEqual(new Set(submitted.get(tenant)!));
      }
    }
  }, 180_000);

  // Capabilities belong to their issuer's tenant (ADR 0013), so receipts are scoped by it.
  it('Issue 8: receipts: concurrent issues, admissions and listings by two tenants stay apart', async () => {
    const authority = h.authority!.url;
    const capabilities = new Map<Tenant, Set<string>>(TENANTS.map((t) => [t, new Set()]));
    const leaks: string[] = [];
    const spend = async (tenant: Tenant) => {
      for (let i = 0; i < PER_TENANT / 4; i++) {
        const cap = await call(authority, 'POST', '/v1/capabilities', issuers.get(tenant)!, {
          subject_public_key: generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!,
          ttl_seconds: 600,
          grants: [{ server_id: 'tools', tool_name: 'search', max_invocations: 100, max_cost_per_invocation: 10 }],
        });
        expect(cap.status).toBe(201);
        capabilities.get(tenant)!.add(cap.body['id']);
        await Promise.all(
          [0, 1, 2].map(() =>
            call(authority, 'POST', '/v1/admissions', cap.body['token'], {
              request_id: `r-${randomUUID()}`,
              server_id: 'tools',
              tool_name: 'search',
              requested_cost: 1,
            }),
          ),
        );
        const page = await call(authority, 'GET', '/v1/receipts?limit=500', readers.get(tenant)!);
        for (const r of page.body['receipts'] as Json[])
          if (!capabilities.get(tenant)!.has(r['capability_id'])) leaks.push(`${tenant} saw ${r['capability_id']}`);
      }
    };
    await Promise.all([spend('default'), spend('acme')]);
    expect(leaks).toEqual([]);
    // The listing reads the projection, which may still be folding the last admissions: wait
    // (bounded) for every own receipt, and fail at once on any other tenant's.
    for (const tenant of TENANTS) {
      const own = capabilities.get(tenant)!;
      let seen = new Set<string>();
      for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
        const page = await call(authority, 'GET', '/v1/receipts?limit=500', readers.get(tenant)!);
        seen = new Set((page.body['receipts'] as Json[]).map((r) => r['capability_id'] as string));
        expect([...seen].filter((id) => !own.has(id))).toEqual([]);
        if (seen.size === own.size) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(seen).toEqual(own);
    }
  }, 180_000);
});
