// Runs real budget-authority processes for the end-to-end suites and talks to them as
// the orchestrator does: Admit and Settle as commands (core NATS request/reply, or the
// durable JetStream commands when the stack's env says nats.budget_commands=jetstream),
// everything else over HTTP. Each stack has its own namespace (streams), its own database (an SQLite file,
// or a PostgreSQL database when DATABASE_URL is set) and a shared signing key, so two
// replicas sign alike. dispose() stops the processes and deletes what the stack created.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { tallyNames, type TallyNames } from '@tally/contracts';
import { connectNats } from '@tally/platform-jetstream';
import { CoreCommandClient, JetStreamCommandClient, type CommandReply, type CommandSender } from '@tally/platform-nest';
import { deleteNamespaceStreams, ServiceProcess, sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import pg from 'pg';
import { adminHeaders, TEST_ADMIN_KEY } from '../../support/auth.js';

export type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface StackOptions {
  /** Extra environment for every authority process (TALLY__AUTHORITY__… settings). */
  readonly env?: Record<string, string>;
  readonly faultInjection?: boolean;
  /** How long each send of an Admit or Settle waits for its reply, and how many sends a command gets. */
  readonly commandTimeoutMs?: number;
  readonly commandAttemptsMax?: number;
}

export class AuthorityStack {
  readonly processes: ServiceProcess[] = [];
  private client: CommandSender | undefined;
  private nc: NatsConnection | undefined;
  private connecting: Promise<CommandSender> | undefined;
  private commandSeq = 0;
  /** Admission proofs by hold id, from this stack's admits: what its settles present. */
  private readonly proofs = new Map<string, unknown>();

  private constructor(
    readonly names: TallyNames,
    readonly env: Record<string, string>,
    private readonly cleanup: () => Promise<void>,
    private readonly sendOptions: { readonly timeoutMs: number; readonly attemptsMax: number },
  ) {}

  /** Whether Admit and Settle travel as durable JetStream commands (ADR 0003) rather than core requests. */
  get durableCommands(): boolean {
    return this.env['TALLY__NATS__BUDGET_COMMANDS'] === 'jetstream';
  }

  static async create(prefix: string, options: StackOptions = {}): Promise<AuthorityStack> {
    const namespace = uniqueNamespace(prefix);
    const database = await createDatabase(namespace);
    const env: Record<string, string> = {
      NATS_URL: sharedNatsUrl(),
      TALLY_NAMESPACE: namespace,
      // Queues reserve their byte limit on the shared server; the ledger streams keep their default (no limit).
      TALLY__STREAMS__QUEUE_MAX_BYTES: String(64 * 1024 * 1024),
      TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(64 * 1024 * 1024),
      TALLY_SIGNING_KEY: randomBytes(32).toString('base64url'),
      TALLY_FAULT_INJECTION: options.faultInjection === false ? 'false' : 'true',
      TALLY_ADMIN_KEY: TEST_ADMIN_KEY,
      ...database.env,
      ...options.env,
    };
    return new AuthorityStack(tallyNames(namespace), env, database.drop, {
      timeoutMs: options.commandTimeoutMs ?? 30_000,
      attemptsMax: options.commandAttemptsMax ?? 4,
    });
  }

  /** Starts one more authority replica on the same streams, database and key. */
  async start(extraEnv: Record<string, string> = {}): Promise<ServiceProcess> {
    const svc = await ServiceProcess.start({
      service: 'budget-authority',
      env: { ...this.env, ...extraEnv },
      readyTimeoutMs: 120_000,
    });
    this.processes.push(svc);
    return svc;
  }

  get url(): string {
    const alive = this.processes.find((p) => p.exited === null);
    if (!alive) throw new Error('no authority process is running');
    return alive.url;
  }

  /** The metrics port of the same replica as `url` (ADR 0053). */
  get metricsUrl(): string {
    const alive = this.processes.find((p) => p.exited === null);
    if (!alive) throw new Error('no authority process is running');
    return alive.metricsUrl;
  }

  /** One client for the stack: concurrent first callers share its connection instead of each opening (and leaking) one. */
  commands(): Promise<CommandSender> {
    this.connecting ??= (async () => {
      this.nc = await connectNats({
        url: sharedNatsUrl(),
        name: `orchestrator-test-${this.names.namespace}`,
        connectTimeoutMs: 5000,
        maxReconnectAttempts: -1,
        reconnectTimeWaitMs: 100,
      });
      this.client = this.durableCommands
        ? await new JetStreamCommandClient(this.nc, {
            names: this.names,
            publishTimeoutMs: 10_000,
            cacheTimeoutMs: 5_000,
            cachePollMs: 50,
          }).start()
        : new CoreCommandClient(this.nc, { names: this.names, retryDelayMs: 100 });
      return this.client;
    })();
    return this.connecting;
  }

  nextCommandId(label: string): string {
    return `${label}-${++this.commandSeq}-${randomBytes(4).toString('hex')}`;
  }

  /** Admit as the orchestrator sends it; the admission proof is kept for the hold's settlement. */
  async admit(payload: Json, commandId = this.nextCommandId('admit')): Promise<Json> {
    const answer = unwrap(await this.send('admit', payload, commandId));
    if (typeof answer['hold_id'] === 'string' && answer['admission_proof'] !== undefined)
      this.proofs.set(answer['hold_id'], answer['admission_proof']);
    return answer;
  }

  /** The admission proof this stack's admit received for a hold (undefined when it was not admitted here). */
  proofOf(holdId: unknown): unknown {
    return typeof holdId === 'string' ? this.proofs.get(holdId) : undefined;
  }

  /**
   * Settle as the orchestrator sends it: with the hold's admission proof (Issue 8), unless the
   * payload brings its own `admission_proof` or `token`, or sets `admission_proof: null` to send none.
   */
  async settle(payload: Json, commandId = this.nextCommandId('settle')): Promise<Json> {
    return unwrap(await this.send('settle', this.withProof(payload), commandId));
  }

  withProof(payload: Json): Json {
    if (payload['admission_proof'] === null) {
      const { admission_proof: _none, ...rest } = payload;
      return rest;
    }
    if (payload['admission_proof'] !== undefined || payload['token'] !== undefined) return payload;
    const proof = this.proofOf(payload['hold_id']);
    return proof === undefined ? payload : { ...payload, admission_proof: proof };
  }

  /** The raw command reply, for validation and idempotency tests. */
  async send(command: string, payload: unknown, commandId: string): Promise<CommandReply<Json>> {
    return (await this.commands()).send<Json>('budget', command, commandId, payload, this.sendOptions);
  }

  /**
   * As the platform team's admin, unless the body carries a capability `token` (then the call
   * is an agent's, the token its credential) or `headers` has its own `authorization` (an
   * empty one sends none).
   */
  async http(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: Json; headers: Headers }> {
    const asAgent = typeof body === 'object' && body !== null && typeof (body as Json)['token'] === 'string';
    const auth = 'authorization' in headers || asAgent ? {} : adminHeaders();
    const sent = Object.fromEntries(Object.entries({ ...auth, ...headers }).filter(([, v]) => v !== ''));
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: body === undefined ? sent : { 'content-type': 'application/json', ...sent },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Json) : {}, headers: res.headers };
  }

  async ok(method: string, path: string, body?: unknown): Promise<Json> {
    const res = await this.http(method, path, body);
    if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  async issue(grants: Json[], extra: Json = {}): Promise<Json> {
    return this.ok('POST', '/v1/capabilities', {
      subject_public_key: newSubjectKey(),
      ttl_seconds: 3600,
      grants,
      ...extra,
    });
  }

  async usage(capabilityId: string, grantIndex = 0): Promise<Json> {
    const body = await this.ok('GET', `/v1/capabilities/${capabilityId}/usage`);
    return (body['grants'] as Json[]).find((g) => g['grant_index'] === grantIndex)!;
  }

  async events(capabilityId: string, grantIndex = 0, limit = 100): Promise<Json[]> {
    return (await this.ok('GET', `/v1/capabilities/${capabilityId}/events?grant_index=${grantIndex}&limit=${limit}`))[
      'events'
    ] as Json[];
  }

  async receipt(receiptId: string): Promise<Json> {
    return this.ok('GET', `/v1/receipts/${encodeURIComponent(receiptId)}`);
  }

  /** Every message in this stack's dead-letter stream, oldest first, as stored. */
  async deadLetters(): Promise<Json[]> {
    const nc = await connect({ servers: sharedNatsUrl() });
    try {
      const jsm = await jetstreamManager(nc);
      const info = await jsm.streams.info(this.names.deadLetterStream);
      const out: Json[] = [];
      for (let seq = info.state.first_seq; info.state.messages > 0 && seq <= info.state.last_seq; seq++) {
        const msg = await jsm.streams.getMessage(this.names.deadLetterStream, { seq }).catch(() => undefined);
        if (msg) out.push(msg.json<Json>());
      }
      return out;
    } finally {
      await nc.close();
    }
  }

  /** Configures faults on every running replica (each has its own simulated rail). */
  async faults(body: Json): Promise<Json[]> {
    const out: Json[] = [];
    for (const p of this.processes.filter((x) => x.exited === null)) {
      const res = await fetch(`${p.url}/v1/test/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...adminHeaders() },
        body: JSON.stringify(body),
      });
      if (res.status !== 200) throw new Error(`faults -> ${res.status} ${await res.text()}`);
      out.push((await res.json()) as Json);
    }
    return out;
  }

  async dispose(): Promise<void> {
    await this.client?.close().catch(() => undefined);
    if (this.nc && !this.nc.isClosed()) await this.nc.drain().catch(() => undefined);
    await Promise.all(this.processes.map((p) => p.stop()));
    await deleteNamespaceStreams(sharedNatsUrl(), this.names.namespace).catch(() => undefined);
    await this.cleanup();
  }
}

function unwrap(reply: CommandReply<Json>): Json {
  if (!reply.ok) throw new Error(`command refused: ${JSON.stringify(reply.error)}`);
  return reply.value;
}

export function newSubjectKey(): string {
  return generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
}

/** An SQLite file, or a PostgreSQL database of its own when DATABASE_URL is set. */
async function createDatabase(namespace: string): Promise<{ env: Record<string, string>; drop: () => Promise<void> }> {
  const url = process.env['DATABASE_URL'];
  if (!url) {
    const dir = mkdtempSync(join(tmpdir(), 'tally-budget-'));
    return {
      env: { DATABASE_URL: '', TALLY_SQLITE_PATH: join(dir, 'projections.sqlite') },
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const name = `t_${namespace}`
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 60);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const own = new URL(url);
  own.pathname = `/${name}`;
  return {
    env: { DATABASE_URL: own.toString() },
    drop: async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
      await c.end();
    },
  };
}

export async function eventually<T>(
  read: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs = 60_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`${what} not reached within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A monetary grant like the seed's make_monetary_grant(server, tool, 100, 1000, "USD"). */
export const monetaryGrant = (extra: Json = {}): Json => ({
  server_id: 'cost-srv',
  tool_name: 'compute',
  max_cost_per_invocation: 100,
  max_total_cost_units: 1000,
  currency: 'USD',
  ...extra,
});

export const admitPayload = (
  token: string,
  requestId: string,
  context: 'standalone' | 'session',
  extra: Json = {},
): Json => ({
  request_id: requestId,
  token,
  server_id: 'cost-srv',
  tool_name: 'compute',
  parameters: {},
  context: context === 'session' ? { kind: 'session', session_id: `session-${requestId}` } : { kind: 'standalone' },
  ...extra,
});

export const holdIdOf = (requestId: string, capabilityId: string, grantIndex = 0): string =>
  `budget-hold:${requestId}:${capabilityId}:${grantIndex}`;

export const CONTEXTS = ['standalone', 'session'] as const;
