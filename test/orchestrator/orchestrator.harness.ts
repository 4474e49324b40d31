// Runs the agent-orchestrator as real processes against the scripted provider over real
// HTTP, each suite in its own namespace with its own SQLite file, and removes its streams
// afterwards. Unmetered mode stands in for the budget authority until that service runs.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  deleteNamespaceStreams,
  ScriptedProvider,
  ServiceProcess,
  sharedNatsUrl,
  uniqueNamespace,
} from '@tally/testing';
import { adminHeaders, TEST_ADMIN_KEY, TokenMint, untilAccepted } from '../support/auth.js';

export const PRICE = { input_per_mtok_units: 1_000_000, output_per_mtok_units: 2_000_000, currency: 'USD' };
export const MODELS = [
  'ok-model',
  'flaky-model',
  'limited-model',
  'abort-model',
  'slow-model',
  'fallback-model',
  'hang-model',
  'bench-model',
] as const;

export interface OrchestratorHarnessOptions {
  readonly prefix: string;
  /** Extra environment for every process (TALLY__… settings). */
  readonly env?: Record<string, string>;
  /** One scripted provider per process (to tell which process dispatched), or one shared. */
  readonly providerPerProcess?: boolean;
  /** More settings for the config file beside the providers (e.g. tool_servers), read when it is written. */
  readonly config?: () => Record<string, unknown>;
  /** The NATS servers (comma-separated) every process connects to; the shared server by default. */
  readonly natsUrl?: string;
}

/** A projection database of its own: an SQLite file, or a PostgreSQL database when DATABASE_URL is set. */
export interface TestDatabase {
  readonly env: Record<string, string>;
  /** openDataSource options that reach the same database from the test. */
  readonly open: { databaseUrl?: string; sqlitePath?: string };
  drop(): Promise<void>;
}

export async function createTestDatabase(dir: string, name: string): Promise<TestDatabase> {
  const url = process.env['DATABASE_URL'];
  if (!url) {
    const path = join(dir, `${name}.sqlite`);
    return {
      env: { DATABASE_URL: '', TALLY_SQLITE_PATH: path },
      open: { sqlitePath: path },
      drop: async () => rmSync(path, { force: true }),
    };
  }
  const db = `t_${name}`
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 60);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${db}"`);
  await admin.end();
  const own = new URL(url);
  own.pathname = `/${db}`;
  return {
    env: { DATABASE_URL: own.toString() },
    open: { databaseUrl: own.toString() },
    drop: async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`).catch(() => undefined);
      await c.end();
    },
  };
}

export class OrchestratorHarness {
  readonly namespace: string;
  readonly dir: string;
  readonly processes: ServiceProcess[] = [];
  readonly providers: ScriptedProvider[] = [];
  readonly databases: TestDatabase[] = [];
  /** Every authority replica started, in order; `authority` is the first. */
  readonly authorities: ServiceProcess[] = [];
  readonly natsUrl: string;
  authority: ServiceProcess | undefined;
  private authorityEnv: Record<string, string> | undefined;
  private database: TestDatabase | undefined;
  private minted: Promise<string> | undefined;

  constructor(private readonly options: OrchestratorHarnessOptions) {
    this.namespace = uniqueNamespace(options.prefix);
    this.natsUrl = options.natsUrl ?? sharedNatsUrl();
    this.dir = mkdtempSync(join(tmpdir(), `tally-${options.prefix}-`));
  }

  /** Another empty projection database (e.g. to replay into). */
  async newDatabase(name: string): Promise<TestDatabase> {
    const db = await createTestDatabase(this.dir, `${this.namespace}_${name}`);
    this.databases.push(db);
    return db;
  }

  /** The orchestrator's projection database, shared by all its replicas. */
  async projectionDatabase(): Promise<TestDatabase> {
    return (this.database ??= await this.newDatabase('orch'));
  }

  /** Starts the real budget-authority in this namespace, with a database (unless `env` names one) and signing key of its own. */
  async startAuthority(env: Record<string, string> = {}): Promise<ServiceProcess> {
    const [first] = await this.startAuthorities(1, env);
    return first!;
  }

  /**
   * Starts `count` more authority replicas at once. All replicas of the harness share one
   * database and one signing key (read from the first call), so they sign alike.
   */
  async startAuthorities(count: number, env: Record<string, string> = {}): Promise<ServiceProcess[]> {
    this.authorityEnv ??= await this.newAuthorityEnv(env);
    const shared = { ...this.authorityEnv, ...env };
    const started = await Promise.all(
      Array.from({ length: count }, () =>
        ServiceProcess.start({ service: 'budget-authority', readyTimeoutMs: 120_000, env: shared }),
      ),
    );
    this.authorities.push(...started);
    this.authority = started[0];
    return started;
  }

  /** The environment every authority replica of the harness runs with. */
  get authorityEnvironment(): Record<string, string> {
    if (!this.authorityEnv) throw new Error('no authority was started');
    return this.authorityEnv;
  }

  private async newAuthorityEnv(env: Record<string, string>): Promise<Record<string, string>> {
    const named = env['DATABASE_URL'] !== undefined || env['TALLY_SQLITE_PATH'] !== undefined;
    const db = named ? { env: {} } : await this.newDatabase('auth');
    return {
      NATS_URL: this.natsUrl,
      TALLY_NAMESPACE: this.namespace,
      // Queues reserve their byte limit on the shared server; the ledger streams keep their default (no limit).
      TALLY__STREAMS__QUEUE_MAX_BYTES: String(64 * 1024 * 1024),
      TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(64 * 1024 * 1024),
      TALLY_SIGNING_KEY: randomBytes(32).toString('base64url'),
      TALLY_ADMIN_KEY: TEST_ADMIN_KEY,
      ...db.env,
      ...env,
    };
  }

  /** The scripted provider process `index` talks to. */
  provider(index = 0): ScriptedProvider {
    return this.providers[this.options.providerPerProcess ? index : 0]!;
  }

  /** Paid calls the provider(s) saw for `model`. */
  calls(model?: string): number {
    return this.providers.reduce((n, p) => n + p.calls(model), 0);
  }

  async start(count = 1, env: Record<string, string> = {}): Promise<ServiceProcess[]> {
    const started: ServiceProcess[] = [];
    for (let i = 0; i < count; i++) {
      const index = this.processes.length;
      if (this.providers.length === 0 || (this.options.providerPerProcess && !this.providers[index]))
        this.providers[index] = await ScriptedProvider.start();
      started.push(await this.startOne(index, env));
    }
    return started;
  }

  /** Starts (or restarts) the process at `index`, on the same namespace, database and provider. */
  async startOne(index: number, env: Record<string, string> = {}): Promise<ServiceProcess> {
    const svc = await ServiceProcess.start({
      service: 'agent-orchestrator',
      readyTimeoutMs: 120_000,
      env: await this.envFor(index, env),
    });
    this.processes[index] = svc;
    return svc;
  }

  /** The environment of the process at `index` (its config file written), e.g. for a CLI run against the same installation. */
  async envFor(index: number, env: Record<string, string> = {}): Promise<Record<string, string>> {
    const provider = this.provider(index);
    const config = join(this.dir, `config-${index}.json`);
    const models = Object.fromEntries(MODELS.map((m) => [m, PRICE]));
    const base = provider.url;
    writeFileSync(
      config,
      JSON.stringify({
        providers: [
          { name: 'scripted', kind: 'openai', base_url: base, api_key_env: 'SCRIPTED_API_KEY', models },
          { name: 'scripted-anthropic', kind: 'anthropic', base_url: base, api_key_env: 'SCRIPTED_API_KEY', models },
        ],
        ...this.options.config?.(),
      }),
    );
    const db = await this.projectionDatabase();
    return {
      NATS_URL: this.natsUrl,
      TALLY_NAMESPACE: this.namespace,
      TALLY_CONFIG: config,
      ...db.env,
      SCRIPTED_API_KEY: 'test-key',
      // Queues reserve their byte limit on the shared server; the ledger streams keep their default (no limit).
      TALLY__STREAMS__QUEUE_MAX_BYTES: String(64 * 1024 * 1024),
      TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(64 * 1024 * 1024),
      TALLY_ADMIN_KEY: TEST_ADMIN_KEY,
      TALLY__ORCHESTRATOR__BUDGET_MODE: 'unmetered',
      TALLY__ORCHESTRATOR__RETRY_BASE_BACKOFF_MS: '1',
      TALLY__ORCHESTRATOR__RETRY_MAX_BACKOFF_MS: '50',
      ...this.options.env,
      ...env,
    };
  }

  get url(): string {
    const alive = this.processes.find((p) => p.exited === null);
    if (!alive) throw new Error('no orchestrator process is running');
    return alive.url;
  }

  /** The metrics port of the same replica as `url` (ADR 0053). */
  get metricsUrl(): string {
    const alive = this.processes.find((p) => p.exited === null);
    if (!alive) throw new Error('no orchestrator process is running');
    return alive.metricsUrl;
  }

  /**
   * A capability token of the default tenant for suites without an authority: sealed by a
   * signing key this harness registers in the namespace's directory (see test/support/auth.ts).
   */
  async token(): Promise<string> {
    this.minted ??= (async () => {
      const mint = await TokenMint.open(this.natsUrl, this.namespace);
      const token = mint.seal();
      for (const p of this.processes.filter((x) => x.exited === null)) await untilAccepted(p.url, token);
      return token;
    })();
    return this.minted;
  }

  /**
   * POSTs as an agent would: a body without `token` goes with the harness's capability token
   * as bearer; a body with one (a real capability) is its own credential; other calls use the
   * admin key.
   */
  async post(path: string, body: unknown, url = this.url): Promise<{ status: number; body: Record<string, unknown> }> {
    const hasToken = typeof body === 'object' && body !== null && 'token' in body;
    const auth =
      path.startsWith('/v1/work') && !path.includes('/abort')
        ? hasToken
          ? {}
          : { authorization: `Bearer ${await this.token()}` }
        : adminHeaders();
    const res = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, unknown> };
  }

  /** A call to the authority with the admin key; a status of 300 or more throws, naming it and the body. */
  async authorityCall(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    const res = await fetch(`${this.authority!.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...adminHeaders() },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(json)}`);
    return json;
  }

  async get(
    path: string,
    url = this.url,
  ): Promise<{ status: number; body: Record<string, unknown>; contentType: string | null }> {
    const res = await fetch(`${url}${path}`, { headers: adminHeaders() });
    return {
      status: res.status,
      body: (await res.json().catch(() => ({}))) as Record<string, unknown>,
      contentType: res.headers.get('content-type'),
    };
  }

  /** Polls until `check` returns a value (not undefined), or fails after timeoutMs. */
  async eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    while (Date.now() < deadline) {
      try {
        const value = await check();
        if (value !== undefined) return value;
      } catch (error) {
        last = error;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(
      `timed out waiting for ${what}${last ? `: ${String(last)}` : ''}\n${this.processes.map((p) => p.logs().slice(-4_000)).join('\n----\n')}`,
    );
  }

  /** Waits until the unit's status (from the projection) is terminal, and returns it. */
  async terminal(workId: string, timeoutMs = 90_000): Promise<Record<string, unknown>> {
    return this.eventually(
      `work ${workId} to end`,
      async () => {
        const { status, body } = await this.get(`/v1/work/${workId}`);
        return status === 200 && ['completed', 'failed', 'aborted'].includes(body['status'] as string)
          ? body
          : undefined;
      },
      timeoutMs,
    );
  }

  /** The session log once its turn card for `workId` is projected. */
  async sessionLog(
    sessionId: string,
    workId: string,
  ): Promise<{ entries: Record<string, unknown>[]; warnings: unknown[] }> {
    return this.eventually(`session ${sessionId} log`, async () => {
      const { status, body } = await this.get(`/v1/sessions/${sessionId}/log`);
      const entries = (body['entries'] ?? []) as Record<string, unknown>[];
      return status === 200 && entries.some((e) => e['kind'] === 'turn-card' && e['work_id'] === workId)
        ? (body as unknown as { entries: Record<string, unknown>[]; warnings: unknown[] })
        : undefined;
    });
  }

  async dispose(): Promise<void> {
    await Promise.all([...this.processes, ...this.authorities].map((p) => p.stop()));
    await Promise.all(this.providers.map((p) => p.stop()));
    for (const db of this.databases) await db.drop();
    await deleteNamespaceStreams(this.natsUrl.split(',')[0]!, this.namespace);
  }
}

let counter = 0;
export function workBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  counter++;
  const id = `w${Date.now().toString(36)}${counter}${Math.random().toString(36).slice(2, 6)}`;
  return {
    work_id: id,
    session_id: `s-${id}`,
    purpose: 'execute',
    route: [{ provider: 'scripted', model: 'ok-model' }],
    messages: [{ role: 'user', content: 'hello' }],
    limits: { max_tokens: 64, timeout_ms: 10_000 },
    ...overrides,
  };
}
