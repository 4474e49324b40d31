// Proves issue 8's access table against the real budget-authority and agent-orchestrator:
// for every HTTP route of both services, each kind of credential gets the status that
// http-api.md ("Credentials") names. The routes come from the route table (the controllers'
// Nest metadata and @Access declarations, exactly what each service mounts), so a route
// added without a row in EXPECTED below fails the first test. To add a route: add one row,
// a request builder and the ten statuses, in credential order.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { HOST_CONTROLLERS } from '@tally/platform-app';
import { routeTable, type RouteEntry } from '@tally/platform-auth';
import {
  AUTHORITY_CONTROLLERS,
  AUTHORITY_OPTIONAL_CONTROLLERS,
} from '../../apps/budget-authority/src/authority.module.js';
import { ORCHESTRATOR_CONTROLLERS } from '../../apps/agent-orchestrator/src/orchestrator.service.js';
import { adminHeaders, TEST_ADMIN_KEY } from '../support/auth.js';
import { OrchestratorHarness, workBody } from '../orchestrator/orchestrator.harness.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Service = 'authority' | 'orchestrator';

/** The credentials of the issue, in the column order of EXPECTED. */
const CREDENTIALS = [
  'none',
  'garbage',
  'expired',
  'deleted',
  'wrong_role',
  'other_tenant',
  'own_tenant',
  'admin',
  'own_capability',
  'other_capability',
] as const;
type CredentialKind = (typeof CREDENTIALS)[number];

/** What a request builder gets: the fixtures, and fresh resources for calls that use one up. */
interface Fixtures {
  readonly capability: { id: string; token: string };
  readonly receiptId: string;
  readonly workId: string;
  readonly sessionId: string;
  freshCapability(): Promise<{ id: string; token: string }>;
  freshHold(): Promise<{ hold_id: string; admission_proof: Json }>;
  freshKeyId(): Promise<string>;
  freshWebhookId(): Promise<string>;
}

interface Request {
  readonly path: string;
  readonly method?: string;
  readonly body?: Json;
  readonly headers?: Record<string, string>;
  /** The capability the resource belongs to ("its capability token"); default: the fixture capability. */
  readonly owner?: { id: string; token: string };
  /** Where a possession route takes a capability token in the body, besides the bearer. */
  readonly tokenField?: string;
}

interface Variant {
  readonly name?: string;
  readonly request: (f: Fixtures) => Promise<Request> | Request;
  /**
   * Ten statuses in CREDENTIALS order. A status written `404 ` is what the spec names but
   * main does not give yet (capabilities carry no tenant until that lands): the case is
   * kept as a failing test, which starts to fail (and asks for the `!` to go) once it is fixed.
   */
  readonly statuses: string;
}

//                                none garb exp  del  role othT ownT adm  cap  othC
const PUBLIC = /*             */ '200  200  200  200  200  200  200  200  200  200';
/** /readyz (ADR 0053): a probe gets its status and anyone may ask, but a credential that does not verify is refused. */
const READINESS = /*          */ '200  401  401  401  200  200  200  200  200  200';
const ADMIN_ONLY = /*         */ '401  401  401  401  403  403  403  200  403  403';
const CAPABILITY_READ = /*    */ '401  401  401  401  200  404  200  200  200  404';
/** A tenant's own resource for its readers: another tenant's is a 404, a capability token is refused. */
const TENANT_READ = /*        */ '401  401  401  401  200  404  200  200  403  403';
const WORK_READ = /*          */ '401  401  401  401  200  404  200  200  200  404';
const SPEND = /*              */ '401  401  401  401  403  403  403  403  200  200';
/** An endpoint no fact of this suite is sent to (ambiguities are never resolved here). */
const WEBHOOK = { url: 'https://hooks.example.com/tally', events: ['ambiguity.resolved'] };
/** A listing scoped in its query: another tenant's key gets an empty page, not a 404. */
const LISTING = /*            */ '401  401  401  401  200  200  200  200  200  200';

const capabilityRead =
  (suffix: string): Variant['request'] =>
  (f) => ({ path: `/v1/capabilities/${f.capability.id}${suffix}` });

const grants = [
  { server_id: 'tools', tool_name: 'search', max_invocations: 1_000, max_cost_per_invocation: 1_000, currency: 'USD' },
  {
    server_id: 'scripted',
    tool_name: 'ok-model',
    max_invocations: 1_000,
    max_cost_per_invocation: 100_000,
    currency: 'USD',
  },
];
const subjectKey = () => generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
const admission = () => ({
  request_id: `r-${randomUUID()}`,
  server_id: 'tools',
  tool_name: 'search',
  requested_cost: 1,
});
const chat = { model: 'scripted/ok-model', messages: [{ role: 'user', content: 'hi' }] };
const mcpInitialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'access-table', version: '1' } },
};

/** Every route of both services, by "<service> <METHOD> /<path>", with its cases. */
const EXPECTED: Record<string, readonly Variant[]> = {
  // Both services: the host's routes.
  'authority GET /healthz': [{ request: () => ({ path: '/healthz' }), statuses: PUBLIC }],
  'authority GET /readyz': [{ request: () => ({ path: '/readyz' }), statuses: READINESS }],
  'authority GET /openapi.json': [{ request: () => ({ path: '/openapi.json' }), statuses: PUBLIC }],
  'orchestrator GET /healthz': [{ request: () => ({ path: '/healthz' }), statuses: PUBLIC }],
  'orchestrator GET /readyz': [{ request: () => ({ path: '/readyz' }), statuses: READINESS }],
  'orchestrator GET /openapi.json': [{ request: () => ({ path: '/openapi.json' }), statuses: PUBLIC }],

  // budget-authority
  'authority GET /v1/keys': [{ request: () => ({ path: '/v1/keys' }), statuses: PUBLIC }],
  'authority GET /.well-known/jwks.json': [{ request: () => ({ path: '/.well-known/jwks.json' }), statuses: PUBLIC }],
  'authority POST /v1/capabilities': [
    {
      name: "a root capability (the caller's tenant)",
      request: () => ({
        path: '/v1/capabilities',
        body: { subject_public_key: subjectKey(), ttl_seconds: 60, grants },
      }),
      //                                                  none garb exp  del  role othT ownT adm  cap  othC
      statuses: /*                                    */ '401  401  401  401  403  201  201  201  403  403',
    },
    {
      name: "a delegation (parent_token, or an issuer of the parent's tenant)",
      request: (f) => ({
        path: '/v1/capabilities',
        body: { subject_public_key: subjectKey(), ttl_seconds: 60, grants: [grants[0]], parent_id: f.capability.id },
        tokenField: 'parent_token',
      }),
      //                                                  none garb exp  del  role othT ownT adm  cap  othC
      statuses: /*                                    */ '401  401  401  401  403  404  201  201  201  403',
    },
  ],
  'authority POST /v1/capabilities/:id/revoke': [
    {
      request: async (f) => {
        const owner = await f.freshCapability();
        return { path: `/v1/capabilities/${owner.id}/revoke`, body: {}, owner, tokenField: 'token' };
      },
      //                                                  none garb exp  del  role othT ownT adm  cap  othC
      statuses: /*                                    */ '401  401  401  401  403  404  200  200  200  403',
    },
  ],
  'authority GET /v1/capabilities/:id': [{ request: capabilityRead(''), statuses: CAPABILITY_READ }],
  'authority GET /v1/capabilities/:id/usage': [{ request: capabilityRead('/usage'), statuses: CAPABILITY_READ }],
  'authority GET /v1/capabilities/:id/events': [{ request: capabilityRead('/events'), statuses: CAPABILITY_READ }],
  'authority GET /v1/capabilities/:id/holds': [{ request: capabilityRead('/holds'), statuses: CAPABILITY_READ }],
  'authority GET /v1/capabilities/:id/ambiguities': [
    { request: capabilityRead('/ambiguities'), statuses: CAPABILITY_READ },
  ],
  'authority POST /v1/admissions': [
    { request: () => ({ path: '/v1/admissions', body: admission() }), statuses: SPEND },
  ],
  'authority POST /v1/settlements': [
    {
      name: "without the proof (an issuer of its tenant, or the admitting capability's token)",
      request: async (f) => {
        const { hold_id } = await f.freshHold();
        return { path: '/v1/settlements', body: { hold_id, outcome: { kind: 'completed', cost_units: 1 } } };
      },
      //                                                  none garb exp  del  role othT ownT adm  cap  othC
      statuses: /*                                    */ '401  401  401  401  403  404  200  200  403  403',
    },
    {
      name: "with the hold's admission_proof",
      request: async (f) => {
        const { hold_id, admission_proof } = await f.freshHold();
        return {
          path: '/v1/settlements',
          body: { hold_id, admission_proof, outcome: { kind: 'completed', cost_units: 1 } },
        };
      },
      //                                                  none garb exp  del  role othT ownT adm  cap  othC
      statuses: /*                                    */ '200  401  401  401  200  200  200  200  200  200',
    },
  ],
  'authority POST /v1/holds/:id/increase': [
    {
      request: async (f) => {
        const { hold_id } = await f.freshHold();
        return { path: `/v1/holds/${hold_id}/increase`, body: { amount_units: 1 } };
      },
      //                                                  none garb exp  del  role othT ownT adm  cap  othC
      statuses: /*                                    */ '401  401  401  401  403  404  200  200  403  403',
    },
  ],
  'authority POST /v1/nonces/redeem': [
    {
      // The nonce is its own proof: anyone may try one; a presented credential must still verify.
      request: () => ({ path: '/v1/nonces/redeem', body: { execution_nonce: 'n1.not-a-nonce.x' } }),
      //                                                  none garb exp  del  role othT ownT adm  cap  othC
      statuses: /*                                    */ '200  401  401  401  200  200  200  200  200  200',
    },
  ],
  'authority GET /v1/receipts': [
    {
      // A listing is scoped in its query: another tenant's key sees an empty page, not a 404.
      request: () => ({ path: '/v1/receipts?limit=5' }),
      //                                                  none garb exp  del  role othT ownT adm  cap  othC
      statuses: /*                                    */ '401  401  401  401  200  200  200  200  200  200',
    },
  ],
  'authority GET /v1/receipts/:id': [
    { request: (f) => ({ path: `/v1/receipts/${encodeURIComponent(f.receiptId)}` }), statuses: CAPABILITY_READ },
  ],
  'authority POST /v1/tenants': [
    {
      request: () => ({ path: '/v1/tenants', body: { id: `t-${randomUUID().slice(0, 8)}` } }),
      statuses: ADMIN_ONLY.replace(' 200 ', ' 201 '),
    },
  ],
  // The web console (ADR 0034): its files hold no data; its reads are listings scoped in their query.
  'authority GET /console': [{ request: () => ({ path: '/console/' }), statuses: PUBLIC }],
  'authority GET /console/:file': [{ request: () => ({ path: '/console/console.js' }), statuses: PUBLIC }],
  'authority GET /console/vendor/:file': [
    { request: () => ({ path: '/console/vendor/chart.umd.min.js' }), statuses: PUBLIC },
  ],
  'authority GET /v1/me': [{ request: () => ({ path: '/v1/me' }), statuses: LISTING }],
  'authority GET /v1/capabilities': [{ request: () => ({ path: '/v1/capabilities?limit=5' }), statuses: LISTING }],
  'authority GET /v1/holds': [{ request: () => ({ path: '/v1/holds?limit=5' }), statuses: LISTING }],
  'authority GET /v1/ambiguities': [{ request: () => ({ path: '/v1/ambiguities?limit=5' }), statuses: LISTING }],
  'authority GET /v1/spend': [{ request: () => ({ path: '/v1/spend?bucket=day' }), statuses: LISTING }],
  'authority GET /v1/console/work/:id': [
    {
      // This harness gives the authority no console.orchestrator_url: past the guard, every caller hears so (404).
      request: (f) => ({ path: `/v1/console/work/${f.workId}` }),
      //                                                  none garb exp  del  role othT ownT adm  cap  othC
      statuses: /*                                    */ '401  401  401  401  404  404  404  404  404  404',
    },
  ],
  'authority GET /v1/tenants': [{ request: () => ({ path: '/v1/tenants' }), statuses: ADMIN_ONLY }],
  'authority GET /v1/tenants/:id': [
    {
      request: () => ({ path: '/v1/tenants/default' }),
      //                                                  none garb exp  del  role othT ownT adm  cap  othC
      statuses: /*                                    */ '401  401  401  401  200  404  200  200  403  403',
    },
  ],
  'authority POST /v1/tenants/:id/keys': [
    {
      request: () => ({ path: '/v1/tenants/default/keys', body: { role: 'reader' } }),
      statuses: ADMIN_ONLY.replace(' 200 ', ' 201 '),
    },
  ],
  'authority GET /v1/tenants/:id/keys': [
    { request: () => ({ path: '/v1/tenants/default/keys' }), statuses: ADMIN_ONLY },
  ],
  'authority DELETE /v1/tenants/:id/keys/:keyId': [
    {
      request: async (f) => ({ method: 'DELETE', path: `/v1/tenants/default/keys/${await f.freshKeyId()}` }),
      statuses: ADMIN_ONLY.replace(' 200 ', ' 204 '),
    },
  ],
  'authority GET /v1/signing-keys': [{ request: () => ({ path: '/v1/signing-keys' }), statuses: ADMIN_ONLY }],
  'authority POST /v1/signing-keys/rotate': [
    { request: () => ({ path: '/v1/signing-keys/rotate', body: {} }), statuses: ADMIN_ONLY },
  ],
  'authority POST /v1/signing-keys/:id/retire': [
    {
      // An unknown key: only an admin learns that it is unknown.
      request: () => ({ path: '/v1/signing-keys/sk-unknown/retire', body: {} }),
      statuses: ADMIN_ONLY.replace(' 200 ', ' 404 '),
    },
  ],
  // Tenant webhooks (issue 11): an admin or an issuer of the tenant registers and deletes; its keys read.
  'authority POST /v1/tenants/:id/webhooks': [
    {
      request: () => ({ path: '/v1/tenants/default/webhooks', body: WEBHOOK }),
      //                                                  none garb exp  del  role othT ownT adm  cap  othC
      statuses: /*                                    */ '401  401  401  401  403  404  201  201  403  403',
    },
  ],
  'authority GET /v1/tenants/:id/webhooks': [
    { request: () => ({ path: '/v1/tenants/default/webhooks' }), statuses: TENANT_READ },
  ],
  'authority DELETE /v1/tenants/:id/webhooks/:webhookId': [
    {
      request: async (f) => ({ method: 'DELETE', path: `/v1/tenants/default/webhooks/${await f.freshWebhookId()}` }),
      //                                                  none garb exp  del  role othT ownT adm  cap  othC
      statuses: /*                                    */ '401  401  401  401  403  404  204  204  403  403',
    },
  ],
  'authority GET /v1/tenants/:id/webhooks/attempts': [
    { request: () => ({ path: '/v1/tenants/default/webhooks/attempts' }), statuses: TENANT_READ },
  ],
  'authority GET /v1/tenants/:id/webhooks/dead-letters': [
    { request: () => ({ path: '/v1/tenants/default/webhooks/dead-letters' }), statuses: TENANT_READ },
  ],
  'authority POST /v1/test/faults': [{ request: () => ({ path: '/v1/test/faults', body: {} }), statuses: ADMIN_ONLY }],

  // agent-orchestrator
  'orchestrator POST /v1/work': [
    { request: () => ({ path: '/v1/work', body: workBody() }), statuses: SPEND.replace(/200/g, '202') },
  ],
  'orchestrator GET /v1/work/:id': [{ request: (f) => ({ path: `/v1/work/${f.workId}` }), statuses: WORK_READ }],
  'orchestrator GET /v1/work/:id/events': [
    { request: (f) => ({ path: `/v1/work/${f.workId}/events` }), statuses: WORK_READ },
  ],
  'orchestrator GET /v1/work/:id/receipt': [
    { request: (f) => ({ path: `/v1/work/${f.workId}/receipt` }), statuses: WORK_READ },
  ],
  'orchestrator POST /v1/work/:id/abort': [
    {
      // The unit has ended: whoever may abort it is told so (409); whoever may not never learns it exists.
      request: (f) => ({ path: `/v1/work/${f.workId}/abort`, body: {} }),
      //                                                  none garb exp  del  role othT ownT adm  cap  othC
      statuses: /*                                    */ '401  401  401  401  403  404  409  409  409  404',
    },
  ],
  'orchestrator GET /v1/sessions/:id/messages': [
    { request: (f) => ({ path: `/v1/sessions/${f.sessionId}/messages` }), statuses: WORK_READ },
  ],
  'orchestrator GET /v1/sessions/:id/log': [
    { request: (f) => ({ path: `/v1/sessions/${f.sessionId}/log` }), statuses: WORK_READ },
  ],
  'orchestrator POST /v1/chat/completions': [
    { request: () => ({ path: '/v1/chat/completions', body: chat }), statuses: SPEND },
  ],
  'orchestrator POST /v1/messages': [
    {
      request: () => ({ path: '/v1/messages', body: { ...chat, max_tokens: 16 } }),
      statuses: SPEND,
    },
  ],
  'orchestrator GET /v1/models': [
    {
      request: () => ({ path: '/v1/models' }),
      //                                                  none garb exp  del  role othT ownT adm  cap  othC
      statuses: /*                                    */ '401  401  401  401  200  200  200  200  200  200',
    },
  ],
  'orchestrator ALL /mcp': [
    {
      name: 'POST initialize',
      request: () => ({
        path: '/mcp',
        body: mcpInitialize,
        headers: { accept: 'application/json, text/event-stream' },
      }),
      statuses: SPEND,
    },
  ],
};

function routesOf(service: Service, controllers: readonly (abstract new (...args: never[]) => unknown)[]): string[] {
  return routeTable(controllers).map((r: RouteEntry) => `${service} ${r.method} /${r.path}`);
}

const MOUNTED = [
  ...routesOf('authority', [...HOST_CONTROLLERS, ...AUTHORITY_CONTROLLERS, ...AUTHORITY_OPTIONAL_CONTROLLERS]),
  ...routesOf('orchestrator', [...HOST_CONTROLLERS, ...ORCHESTRATOR_CONTROLLERS]),
];

function parse(statuses: string): { status: number; pending: boolean }[] {
  const cells = statuses.trim().split(/\s+/);
  if (cells.length !== CREDENTIALS.length)
    throw new Error(`expected ${CREDENTIALS.length} statuses, got "${statuses}"`);
  return cells.map((c) => ({ status: Number(c.replace('!', '')), pending: c.endsWith('!') }));
}

describe('Issue 8: the access table of both services, generated from the route table', () => {
  const h = new OrchestratorHarness({ prefix: 'access' });
  const credentials = new Map<CredentialKind, string | undefined>();
  let fixtures: Fixtures;

  const baseOf = (service: Service) => (service === 'authority' ? h.authority!.url : h.url);

  async function call(
    service: Service,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = adminHeaders(),
  ) {
    const res = await fetch(`${baseOf(service)}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    let json: Json = {};
    try {
      json = text ? (JSON.parse(text) as Json) : {};
    } catch {
      json = { text };
    }
    return { status: res.status, body: json };
  }

  async function ok(service: Service, method: string, path: string, body?: unknown, headers?: Record<string, string>) {
    const res = await call(service, method, path, body, headers);
    if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  const issue = async () => {
    const cap = await ok('authority', 'POST', '/v1/capabilities', {
      subject_public_key: subjectKey(),
      ttl_seconds: 3600,
      grants,
    });
    return { id: cap['id'] as string, token: cap['token'] as string };
  };
  const operatorKey = async (tenant: string, role: string, ttl?: number) =>
    (await ok('authority', 'POST', `/v1/tenants/${tenant}/keys`, { role, ...(ttl ? { ttl_seconds: ttl } : {}) })) as {
      key_id: string;
      key: string;
    };

  beforeAll(async () => {
    await h.startAuthority({ TALLY_FAULT_INJECTION: 'true' });
    await h.start(1);
    await ok('authority', 'POST', '/v1/tenants', { id: 'acme' });
    const expiring = await operatorKey('default', 'issuer', 1);
    const deleted = await operatorKey('default', 'issuer');
    await ok('authority', 'DELETE', `/v1/tenants/default/keys/${deleted.key_id}`);
    const capability = await issue();
    const other = await issue();
    credentials.set('none', undefined);
    credentials.set('garbage', 'not-a-credential-at-all-0123456789');
    credentials.set('expired', expiring.key);
    credentials.set('deleted', deleted.key);
    credentials.set('wrong_role', (await operatorKey('default', 'reader')).key);
    credentials.set('other_tenant', (await operatorKey('acme', 'issuer')).key);
    credentials.set('own_tenant', (await operatorKey('default', 'issuer')).key);
    credentials.set('admin', TEST_ADMIN_KEY);
    credentials.set('other_capability', other.token);
    const admitted = await ok('authority', 'POST', '/v1/admissions', admission(), {
      authorization: `Bearer ${capability.token}`,
    });
    const work = workBody();
    // The orchestrator follows the directory: wait until it knows the tenant keys, then run one unit.
    await h.eventually('the orchestrator to know the keys', async () => {
      const res = await call('orchestrator', 'GET', '/v1/models', undefined, {
        authorization: `Bearer ${credentials.get('own_tenant')!}`,
      });
      return res.status === 200 ? true : undefined;
    });
    await ok('orchestrator', 'POST', '/v1/work', work, { authorization: `Bearer ${capability.token}` });
    await h.terminal(work['work_id'] as string);
    fixtures = {
      capability,
      receiptId: (admitted['receipt'] as Json)['id'] as string,
      workId: work['work_id'] as string,
      sessionId: work['session_id'] as string,
      freshCapability: issue,
      freshHold: async () => {
        const out = await ok('authority', 'POST', '/v1/admissions', admission(), {
          authorization: `Bearer ${capability.token}`,
        });
        return { hold_id: out['hold_id'] as string, admission_proof: out['admission_proof'] as Json };
      },
      freshKeyId: async () => (await operatorKey('default', 'reader')).key_id,
      freshWebhookId: async () =>
        (await ok('authority', 'POST', '/v1/tenants/default/webhooks', WEBHOOK))['id'] as string,
    };
    // The expired key has had its second by now; wait until both services refuse it.
    await h.eventually('the short-lived key to expire', async () => {
      const res = await call('authority', 'GET', '/v1/tenants/default', undefined, {
        authorization: `Bearer ${expiring.key}`,
      });
      return res.status === 401 ? true : undefined;
    });
  }, 300_000);

  afterAll(async () => {
    await h.dispose();
  });

  it('Issue 8: every mounted route of both services has a row in the expected table, and every row a route', () => {
    const missing = MOUNTED.filter((route) => !(route in EXPECTED));
    const stale = Object.keys(EXPECTED).filter((route) => !MOUNTED.includes(route));
    expect({ missing, stale }).toEqual({ missing: [], stale: [] });
    for (const variants of Object.values(EXPECTED)) for (const v of variants) parse(v.statuses);
  });

  async function run(route: string, variant: Variant, kind: CredentialKind): Promise<{ status: number; body: Json }> {
    const [service, method] = route.split(' ') as [Service, string];
    const request = await variant.request(fixtures);
    const owner = request.owner ?? fixtures.capability;
    const credential = kind === 'own_capability' ? owner.token : credentials.get(kind);
    const isCapability = kind === 'own_capability' || kind === 'other_capability';
    const body =
      request.body !== undefined && isCapability && request.tokenField
        ? { ...request.body, [request.tokenField]: credential }
        : request.body;
    const headers = {
      ...(credential === undefined ? {} : { authorization: `Bearer ${credential}` }),
      ...request.headers,
    };
    return call(service, request.method ?? (method === 'ALL' ? 'POST' : method), request.path, body, headers);
  }

  for (const route of MOUNTED) {
    const variants = EXPECTED[route] ?? [];
    for (const variant of variants) {
      const title = `${route}${variant.name ? ` (${variant.name})` : ''}`;
      const cells = parse(variant.statuses);
      it(`Issue 8: access table: ${title}`, async () => {
        const got: Record<string, string> = {};
        const want: Record<string, string> = {};
        for (const [index, kind] of CREDENTIALS.entries()) {
          if (cells[index]!.pending) continue;
          const res = await run(route, variant, kind);
          got[kind] = `${res.status}`;
          want[kind] = `${cells[index]!.status}`;
          if (got[kind] !== want[kind]) got[kind] += ` ${JSON.stringify(res.body).slice(0, 200)}`;
        }
        expect(got).toEqual(want);
      });
      for (const [index, kind] of CREDENTIALS.entries()) {
        if (!cells[index]!.pending) continue;
        // Pending on main: capabilities carry no tenant yet. Fails (so passes here) until that lands.
        it.failing(
          `Issue 8: access table: ${title} with ${kind} is ${cells[index]!.status} (pending: capability tenants)`,
          async () => {
            expect((await run(route, variant, kind)).status).toBe(cells[index]!.status);
          },
        );
      }
    }
  }
});
