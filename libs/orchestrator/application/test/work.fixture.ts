// Shared set-up for the dispatch-worker tests: a real JetStream work-events stream in its own
// namespace, the real provider gateway over real HTTP against a scripted provider server,
// and an in-memory budget authority (the real one is a separate service; it is faked here
// behind the same port, answering idempotently by command id as the real one does).
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { tallyNames, type TallyNames } from '@tally/contracts';
import {
  DispatchWorker,
  WorkUnitRepository,
  WorkUnits,
  workEventRegistry,
  type AdmitDecision,
  type AdmitRequest,
  type BudgetPort,
  type DispatchWorkerOptions,
  type PriceTable,
  type PromptProfiles,
  type ProviderGateway,
  type SettleRequest,
  type SubmitWorkInput,
} from '@tally/orchestrator-application';
import { DEFAULT_GATEWAY_OPTIONS, ProviderRegistry } from '@tally/orchestrator-providers';
import { JetStreamEventStore, connectNats, ensureStream } from '@tally/platform-jetstream';
import { ScriptedProvider, sharedNatsUrl, uniqueNamespace, testEventStreamSpec } from '@tally/testing';
import { randomUUID } from 'node:crypto';

/** The capability token every fixture unit is submitted with. */
export const TOKEN = 'capability-token';

export const PRICES = {
  'ok-model': { input_per_mtok_units: 1_000_000, output_per_mtok_units: 2_000_000, currency: 'USD' },
  'flaky-model': { input_per_mtok_units: 1_000_000, output_per_mtok_units: 2_000_000, currency: 'USD' },
  'limited-model': { input_per_mtok_units: 1_000_000, output_per_mtok_units: 2_000_000, currency: 'USD' },
  'bad-model': { input_per_mtok_units: 1_000_000, output_per_mtok_units: 2_000_000, currency: 'USD' },
  'slow-model': { input_per_mtok_units: 1_000_000, output_per_mtok_units: 2_000_000, currency: 'USD' },
};

/** Budget authority double: records every command and answers a repeated command id with its first answer. */
export class InMemoryBudget implements BudgetPort {
  readonly admits: AdmitRequest[] = [];
  readonly settles: SettleRequest[] = [];
  private readonly answers = new Map<string, AdmitDecision>();
  private readonly settled = new Map<string, SettleRequest>();
  denyReason: string | undefined;

  async admit(request: AdmitRequest): Promise<AdmitDecision> {
    this.admits.push(request);
    const known = this.answers.get(request.command_id);
    if (known) return known;
    const answer: AdmitDecision = this.denyReason
      ? { verdict: 'deny', reason: this.denyReason }
      : { verdict: 'allow', hold_id: `hold-${randomUUID()}` };
    this.answers.set(request.command_id, answer);
    return answer;
  }

  async settle(request: SettleRequest) {
    this.settles.push(request);
    if (!this.settled.has(request.command_id)) this.settled.set(request.command_id, request);
    return { receipt: { hold_id: request.hold_id } };
  }

  /** The first (effective) settlement of each distinct command. */
  effectiveSettles(): SettleRequest[] {
    return [...this.settled.values()];
  }
}

export interface WorkFixture {
  nc: NatsConnection;
  jsm: JetStreamManager;
  names: TallyNames;
  repository: WorkUnitRepository;
  units: WorkUnits;
  provider: ScriptedProvider;
  gateway: ProviderRegistry;
  budget: InMemoryBudget;
  /** A worker whose deliveries carry TOKEN, as the work-queue message does, unless `credential` says otherwise. */
  worker(
    overrides?: Partial<{
      repository: WorkUnitRepository;
      gateway: ProviderGateway;
      prices: PriceTable;
      prompts: PromptProfiles;
      budget: BudgetPort;
      jitter: () => number;
      options: Partial<DispatchWorkerOptions>;
    }>,
  ): Pick<DispatchWorker, 'process'>;
  submit(workId: string, overrides?: Partial<SubmitWorkInput>): Promise<void>;
  /** A second connection and store over the same stream, as another process would have. */
  reopen(): Promise<{ repository: WorkUnitRepository; units: WorkUnits; close(): Promise<void> }>;
  dispose(): Promise<void>;
}

const realClock = { nowMs: () => Date.now() };
export const realSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

async function openStore(url: string, names: TallyNames) {
  const nc = await connectNats({
    url,
    name: `test-${names.namespace}`,
    connectTimeoutMs: 5000,
    maxReconnectAttempts: -1,
    reconnectTimeWaitMs: 100,
  });
  const jsm = await jetstreamManager(nc);
  const store = new JetStreamEventStore(jetstream(nc), jsm, {
    stream: names.workEventsStream,
    registry: workEventRegistry(),
    publishTimeoutMs: 5000,
    loadEventsMax: 10_000,
    loadIdleTimeoutMs: 5000,
  });
  const repository = new WorkUnitRepository(store, (id) => names.workEventSubject(id));
  return { nc, jsm, repository, units: new WorkUnits(repository, realClock, 5) };
}

export async function workFixture(prefix: string): Promise<WorkFixture> {
  const url = sharedNatsUrl();
  const names = tallyNames(uniqueNamespace(prefix));
  const { nc, jsm, repository, units } = await openStore(url, names);
  await ensureStream(jsm, testEventStreamSpec(names.workEventsStream, [names.workEventsWildcard], 64 * 1024 * 1024));
  const provider = await ScriptedProvider.start();
  const gateway = new ProviderRegistry(
    [{ name: 'scripted', kind: 'openai', base_url: provider.url, api_key_env: 'SCRIPTED_API_KEY', models: PRICES }],
    {
      ...DEFAULT_GATEWAY_OPTIONS,
      breaker: { failureThreshold: 1_000, coolDownMs: 1_000, halfOpenProbesMax: 1 },
      env: { SCRIPTED_API_KEY: 'test-key' },
    },
  );
  const budget = new InMemoryBudget();
  const fixture: WorkFixture = {
    nc,
    jsm,
    names,
    repository,
    units,
    provider,
    gateway,
    budget,
    worker: (overrides = {}) => {
      const worker = new DispatchWorker({
        repository: overrides.repository ?? repository,
        gateway: overrides.gateway ?? gateway,
        budget: overrides.budget ?? budget,
        prices: overrides.prices ?? gateway,
        ...(overrides.prompts === undefined ? {} : { prompts: overrides.prompts }),
        clock: realClock,
        jitter: overrides.jitter ?? Math.random,
        sleep: realSleep,
        newId: randomUUID,
        options: { stepsMax: 200, abortPollMs: 20, conflictRetriesMax: 5, ...overrides.options },
      });
      return { process: (workId, options = {}) => worker.process(workId, { credential: TOKEN, ...options }) };
    },
    submit: async (workId, overrides = {}) => {
      const result = await units.submit({
        work_id: workId,
        session_id: `session-${workId}`,
        purpose: 'execute',
        token: TOKEN,
        route: [{ provider: 'scripted', model: 'ok-model' }],
        messages: [{ role: 'user', content: 'hello' }],
        ...overrides,
        limits: {
          retry_base_backoff_ms: 1,
          run_retry_base_backoff_ms: 1,
          max_tokens: 64,
          timeout_ms: 5_000,
          ...overrides.limits,
        },
      });
      if (!result.ok) throw new Error(`submit refused: ${result.rejection.message}`);
    },
    reopen: async () => {
      const other = await openStore(url, names);
      return { repository: other.repository, units: other.units, close: () => other.nc.drain() };
    },
    dispose: async () => {
      gateway.close();
      await provider.stop();
      await jsm.streams.delete(names.workEventsStream).catch(() => undefined);
      await nc.drain();
    },
  };
  return fixture;
}

/**
 * Counts the reads of the work-events stream (direct gets and API gets) made on this NATS
 * server until `stop` is called, as seen by subscribing to their request subjects.
 */
export async function countUnitReads(f: Pick<WorkFixture, 'nc' | 'names'>): Promise<{ stop(): Promise<number> }> {
  let reads = 0;
  const stream = f.names.workEventsStream;
  const subs = [
    `$JS.API.DIRECT.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}.>`,
    `$JS.API.STREAM.MSG.GET.${stream}`,
  ].map((s) => f.nc.subscribe(s, { callback: () => void reads++ }));
  await f.nc.flush();
  return {
    async stop() {
      await f.nc.flush();
      for (const sub of subs) sub.unsubscribe();
      return reads;
    },
  };
}

/** The event types of each commit on `subject` after stream sequence `after`, in order. */
export async function commitTypesAfter(
  f: Pick<WorkFixture, 'jsm' | 'names'>,
  subject: string,
  after: number,
): Promise<string[]> {
  const commits: string[] = [];
  for (let seq = after + 1; ; seq++) {
    const msg = await f.jsm.streams.getMessage(f.names.workEventsStream, { seq }).catch(() => null);
    if (!msg) return commits;
    if (msg.subject === subject)
      commits.push(msg.header.get('Tally-Event-Types') || msg.header.get('Tally-Event-Type'));
  }
}
