// Proves issue 18 ("Also") against a live budget-authority and agent-orchestrator: requests
// generated from each service's own OpenAPI document, for every route and every credential
// kind (none, a wrong one, and a valid one of each kind the route accepts), in bounded time,
// never get a 5xx, never show a secret the fuzzer used (its credentials, the signing seed),
// never append an event when they are refused, and leave both services healthy and ready.
// The stack raises the per-source refusal limit (ADR 0050) so the fuzzer measures the routes,
// not the limiter (ADR 0052).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import fc from 'fast-check';
import { tallyNames, type TallyNames } from '@tally/contracts';
import { HOST_CONTROLLERS } from '@tally/platform-app';
import { routeTable, type AccessRule } from '@tally/platform-auth';
import {
  AUTHORITY_CONTROLLERS,
  AUTHORITY_OPTIONAL_CONTROLLERS,
} from '../../apps/budget-authority/src/authority.module.js';
import { ORCHESTRATOR_CONTROLLERS } from '../../apps/agent-orchestrator/src/orchestrator.service.js';
import { OrchestratorHarness } from '../orchestrator/orchestrator.harness.js';
import { TEST_ADMIN_KEY } from '../support/auth.js';
import { anyString, bodyFor, operationsOf, type Json, type Operation } from '../support/openapi-arbitrary.js';

type Service = 'authority' | 'orchestrator';
type Credential = 'none' | 'wrong' | 'admin' | 'issuer' | 'reader' | 'capability';

/** How long the fuzzing may run, and how many requests each route and credential gets at most. */
const FUZZ_TIME_MS = 60_000;
const REQUESTS_PER_CASE_MAX = 12;
const SEED = Number(process.env['TALLY_FUZZ_SEED'] ?? 1812);
/** Statuses that refuse a request: nothing it asked for may be recorded. */
const REFUSED = new Set([400, 401, 403, 404, 405, 409, 413, 415, 422, 429]);
const REFUSALS_UNLIMITED = { TALLY__HTTP__REFUSALS_PER_MINUTE_MAX: '1000000' };

const h = new OrchestratorHarness({
  prefix: 'fuzz',
  env: { TALLY__ORCHESTRATOR__BUDGET_MODE: 'metered', ...REFUSALS_UNLIMITED },
});
const credentials = new Map<Credential, string | undefined>();
const ids: Record<string, string[]> = {};
const documents = new Map<Service, Json>();
let names: TallyNames;
let nc: NatsConnection;
let jsm: JetStreamManager;

const baseOf = (service: Service) => (service === 'authority' ? h.authority!.url : h.url);

async function call(service: Service, method: string, path: string, body?: unknown, token?: string) {
  const res = await fetch(`${baseOf(service)}${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      accept: 'application/json, text/event-stream',
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  return { status: res.status, text, headers: [...res.headers.entries()].map(([k, v]) => `${k}: ${v}`).join('\n') };
}

async function ok(service: Service, method: string, path: string, body?: unknown): Promise<Json> {
  const res = await call(service, method, path, body, TEST_ADMIN_KEY);
  if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status} ${res.text}`);
  return JSON.parse(res.text) as Json;
}

beforeAll(async () => {
  await h.startAuthority(REFUSALS_UNLIMITED);
  await h.start(1);
  names = tallyNames(h.namespace);
  nc = await connect({ servers: h.natsUrl });
  jsm = await jetstreamManager(nc);
  const issuer = (await ok('authority', 'POST', '/v1/tenants/default/keys', { role: 'issuer' })) as Json;
  const reader = (await ok('authority', 'POST', '/v1/tenants/default/keys', { role: 'reader' })) as Json;
  const cap = await ok('authority', 'POST', '/v1/capabilities', {
    subject_public_key: generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!,
    ttl_seconds: 3600,
    grants: [
      {
        server_id: 'scripted',
        tool_name: 'ok-model',
        max_invocations: 50,
        max_cost_per_invocation: 100_000,
        currency: 'USD',
      },
      { server_id: 'tools', tool_name: 'search', max_invocations: 50, max_cost_per_invocation: 100, currency: 'USD' },
    ],
  });
  credentials.set('none', undefined);
  credentials.set('wrong', 'tally_not_a_key_0123456789abcdef');
  credentials.set('admin', TEST_ADMIN_KEY);
  credentials.set('issuer', issuer['key'] as string);
  credentials.set('reader', reader['key'] as string);
  credentials.set('capability', cap['token'] as string);
  ids['id'] = [cap['id'] as string, 'default'];
  ids['keyId'] = [reader['key_id'] as string];
  for (const service of ['authority', 'orchestrator'] as const)
    documents.set(service, JSON.parse((await call(service, 'GET', '/openapi.json')).text) as Json);
  // The orchestrator follows the directory: wait until it knows the tenant keys.
  await h.eventually('the orchestrator to know the keys', async () =>
    (await call('orchestrator', 'GET', '/v1/models', undefined, credentials.get('reader'))).status === 200
      ? true
      : undefined,
  );
}, 300_000);
afterAll(async () => {
  await nc?.close();
  await h.dispose();
}, 60_000);

/** What each credential a route accepts is, by its access rules (besides none and a wrong one). */
const VALID: Record<AccessRule, Credential[]> = {
  public: ['none'],
  admin: ['admin'],
  issuer: ['issuer'],
  reader: ['reader'],
  capability: ['capability'],
  possession: ['none', 'capability'],
};

function accessOf(service: Service): Map<string, readonly AccessRule[]> {
  const controllers =
    service === 'authority'
      ? [...HOST_CONTROLLERS, ...AUTHORITY_CONTROLLERS, ...AUTHORITY_OPTIONAL_CONTROLLERS]
      : [...HOST_CONTROLLERS, ...ORCHESTRATOR_CONTROLLERS];
  const out = new Map<string, readonly AccessRule[]>();
  for (const r of routeTable(controllers as never)) {
    const path = `/${r.path.replace(/^\/+/, '')}`.replace(/:([A-Za-z_]+)/g, '{$1}');
    for (const method of r.method === 'ALL' ? ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] : [r.method])
      out.set(`${method} ${path}`, r.access ?? []);
  }
  return out;
}

interface Case {
  readonly service: Service;
  readonly operation: Operation;
  readonly credential: Credential;
}

function casesOf(service: Service): Case[] {
  const access = accessOf(service);
  return operationsOf(documents.get(service)!).flatMap((operation) => {
    const rules = access.get(`${operation.method} ${operation.path}`);
    if (!rules) throw new Error(`${service} ${operation.method} ${operation.path} is documented but not mounted`);
    const kinds = new Set<Credential>(['none', 'wrong', ...rules.flatMap((rule) => VALID[rule])]);
    return [...kinds].map((credential) => ({ service, operation, credential }));
  });
}

/** A request for the case: its path with parameters filled in (known ids or anything), a query and a body. */
function requestsFor(c: Case, seed: number): { path: string; body: unknown }[] {
  const document = documents.get(c.service)!;
  const param = (name: string) => fc.oneof(fc.constantFrom(...(ids[name] ?? ['x'])), anyString);
  const arb = fc.record({
    params: fc.tuple(...c.operation.pathParams.map(param)),
    query: fc
      .subarray(c.operation.query.map((q) => q.name))
      .chain((keys) => fc.tuple(...keys.map((k) => fc.tuple(fc.constant(k), anyString)))),
    body: bodyFor(document, c.operation),
  });
  return fc.sample(arb, { seed, numRuns: REQUESTS_PER_CASE_MAX }).map(({ params, query, body }) => {
    let path = c.operation.path;
    c.operation.pathParams.forEach((name, i) => (path = path.replace(`{${name}}`, segment(params[i]!))));
    const search = new URLSearchParams(query as [string, string][]).toString();
    return { path: search ? `${path}?${search}` : path, body };
  });
}

/** A path segment for any string: its UTF-8 bytes percent-encoded (a lone surrogate becomes U+FFFD, as on the wire). */
function segment(value: string): string {
  return [...Buffer.from(value, 'utf8')]
    .map((b) =>
      /[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0')}`,
    )
    .join('');
}

/** Where a refused request could leave an event: every event and queue stream of the installation. */
const watchedStreams = () => [
  names.budgetEventsStream,
  names.workEventsStream,
  names.workQueueStream,
  names.directoryEventsStream,
  names.webhookEventsStream,
];

async function lastSequences(): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const stream of watchedStreams()) {
    const info = await jsm.streams.info(stream).catch(() => undefined);
    out.set(stream, info?.state.last_seq ?? 0);
  }
  return out;
}

/** The subjects of the messages appended since `before`. */
async function appendedSince(before: Map<string, number>): Promise<string[]> {
  const after = await lastSequences();
  const subjects: string[] = [];
  for (const [stream, last] of after)
    for (let seq = before.get(stream)! + 1; seq <= last && subjects.length < 50; seq++) {
      const msg = await jsm.streams.getMessage(stream, { seq }).catch(() => undefined);
      subjects.push(msg?.subject ?? `${stream}#${seq}`);
    }
  return subjects;
}

/** Waits until no watched stream grows for a moment: what an accepted request set going has landed. */
async function quiet(): Promise<Map<string, number>> {
  let last = await lastSequences();
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const now = await lastSequences();
    if ([...now].every(([s, seq]) => last.get(s) === seq)) return now;
    last = now;
  }
  return last;
}

/**
 * The events a refused request appended, outside the unverified-requests tree. Something an
 * accepted request set going may land late, inside the refusal's window; so a refusal that
 * seems to have appended is sent again once the streams are quiet, and counts only if it
 * appends again with the same refusal.
 */
async function refusalEvents(
  before: Map<string, number>,
  unverified: string,
  status: number,
  send: () => Promise<{ status: number }>,
): Promise<string[]> {
  const foreign = (since: Map<string, number>) =>
    appendedSince(since).then((subjects) => subjects.filter((s) => s !== unverified));
  if ((await foreign(before)).length === 0) return [];
  const quietNow = await quiet();
  const again = await send();
  return again.status === status ? foreign(quietNow) : [];
}

function secrets(): [string, string][] {
  const out: [string, string][] = [
    ['the admin key', TEST_ADMIN_KEY],
    ['the authority signing seed', h.authorityEnvironment['TALLY_SIGNING_KEY']!],
  ];
  for (const kind of ['issuer', 'reader', 'capability'] as const)
    out.push([`the ${kind} credential`, credentials.get(kind)!]);
  return out;
}

describe('Issue 18: a fuzz suite over both OpenAPI documents', () => {
  it('Issue 18 requests generated from the OpenAPI documents, for every route and credential kind: no 5xx, no secret answered, no event from a refusal', async () => {
    const cases = [...casesOf('authority'), ...casesOf('orchestrator')];
    const planned = cases.map((c, i) => ({ c, requests: requestsFor(c, SEED + i) }));
    // The unverified-requests tree keeps the deny receipt of a settlement for a hold the caller may not
    // see (a 404 by design): the audit of refused commands, the one place a refusal is recorded.
    const unverified = names.budgetEventSubject('_unverified');
    const problems: string[] = [];
    const started = Date.now();
    let sent = 0;
    const statuses = new Map<string, number>();
    let before = await quiet();
    for (let round = 0; round < REQUESTS_PER_CASE_MAX && Date.now() - started < FUZZ_TIME_MS; round++) {
      for (const { c, requests } of planned) {
        const { path, body } = requests[round]!;
        const what = `${c.service} ${c.operation.method} ${path} as ${c.credential} (seed ${SEED})`;
        const res = await call(c.service, c.operation.method, path, body, credentials.get(c.credential)).catch(
          (error: Error) => ({ status: 599, text: error.message, headers: '' }),
        );
        sent++;
        const tally = `${c.service} ${Math.floor(res.status / 100)}xx`;
        statuses.set(tally, (statuses.get(tally) ?? 0) + 1);
        if (res.status >= 500) problems.push(`${what} -> ${res.status} ${res.text.slice(0, 300)}`);
        for (const [name, secret] of secrets())
          if (res.text.includes(secret) || res.headers.includes(secret)) problems.push(`${what} answered ${name}`);
        if (REFUSED.has(res.status)) {
          const send = () => call(c.service, c.operation.method, path, body, credentials.get(c.credential));
          const appended = await refusalEvents(before, unverified, res.status, send);
          if (appended.length > 0) problems.push(`${what} -> ${res.status} appended ${appended.join(', ')}`);
          before = await lastSequences();
        } else if (c.operation.method !== 'GET') before = await quiet();
        if (problems.length >= 20) break;
      }
    }
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    console.info(`fuzz: ${cases.length} cases, ${sent} requests in ${seconds} s`, Object.fromEntries(statuses));
    expect(problems).toEqual([]);
    // Every route and credential was tried at least once within the time, and generated bodies got past validation.
    expect(sent).toBeGreaterThanOrEqual(cases.length);
    expect(statuses.get('authority 2xx')).toBeGreaterThan(0);
    expect(statuses.get('orchestrator 2xx')).toBeGreaterThan(0);
  }, 180_000);

  it('Issue 18 both services are healthy and ready after the fuzzing', async () => {
    for (const service of ['authority', 'orchestrator'] as const) {
      expect((await call(service, 'GET', '/healthz')).status).toBe(200);
      const ready = await call(service, 'GET', '/readyz', undefined, TEST_ADMIN_KEY);
      expect(ready.status).toBe(200);
    }
  });
});
