// A BudgetAuthority on a real JetStream stream of its own namespace, with the simulated
// rail, a controllable clock, an optional lost-acknowledgement decorator and a counting
// admission hook. Tests drive it through the facade only.
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import {
  BudgetAuthority,
  budgetEventRegistry,
  type AdmissionHook,
  type AdmitCommand,
  type BudgetAuthorityLimits,
  type IssuedCapability,
} from '@tally/budget-application';
import type { AdmitContext, Grant } from '@tally/budget-domain';
import {
  Ed25519Signer,
  LostAckEventStore,
  SimulatedPaymentRail,
  type LostAckOptions,
  type SimulatedRailOptions,
} from '@tally/budget-infrastructure';
import { tallyNames, type EventMessage, type TallyNames } from '@tally/contracts';
import type { AppendResult, EventStore, LoadResult } from '@tally/eventing';
import { JetStreamEventStore, connectNats, ensureStream } from '@tally/platform-jetstream';
import { sharedNatsUrl, uniqueNamespace, testEventStreamSpec } from '@tally/testing';

export const LIMITS: BudgetAuthorityLimits = {
  appendAttemptsMax: 64,
  truthReadAttemptsMax: 3,
  truthReadDelayMs: 20,
  treeCacheMax: 1000,
  queueWaitingMax: 10_000,
  holdTtlMs: 30_000,
  unsettledGraceMs: 60_000,
  nonceTtlMs: 30_000,
  requireExecutionNonce: false,
  delegationDepthMax: 8,
  grantsPerCapabilityMax: 32,
  capabilityTtlMaxMs: 7 * 24 * 3_600_000,
  expireHoldsPerStepMax: 500,
  mutationListLimitMax: 1000,
  receiptAppendAttemptsMax: 3,
};

export const MONETARY: Grant = {
  server_id: 'cost-srv',
  tool_name: 'compute',
  max_cost_per_invocation: 100n,
  max_total_cost_units: 1000n,
  currency: 'USD',
};
export const PLAIN: Grant = { server_id: 'srv-a', tool_name: 'read_file' };
export const CONTEXTS: ReadonlyArray<[string, AdmitContext]> = [
  ['standalone', { kind: 'standalone' }],
  ['in-session', { kind: 'session', session_id: 'sess-1' }],
];

/** A hook that leases every admission and can be told to fail releases or wait at a barrier. */
export class CountingHook implements AdmissionHook {
  readonly name = 'counting-test-hook';
  reserves = 0;
  releases = 0;
  failReleases = false;
  barrier: { size: number; waiting: Array<() => void> } | undefined;

  async reserve(request: { request_id: string }) {
    const leaseId = `lease-${request.request_id}-${++this.reserves}`;
    if (this.barrier) {
      const barrier = this.barrier;
      await new Promise<void>((resolve) => {
        barrier.waiting.push(resolve);
        if (barrier.waiting.length >= barrier.size) for (const wake of barrier.waiting) wake();
      });
    }
    return { outcome: 'allow' as const, lease_id: leaseId };
  }

  async release() {
    this.releases++;
    if (this.failReleases) throw new Error('lease service lost the release');
  }
}

export interface FixtureOptions {
  readonly lostAck?: LostAckOptions;
  readonly rail?: SimulatedRailOptions;
  readonly limits?: Partial<BudgetAuthorityLimits>;
}

export class AuthorityFixture {
  nowMs = Date.parse('2026-03-01T00:00:00.000Z');
  readonly hook = new CountingHook();
  readonly signer = Ed25519Signer.generate();
  rail: SimulatedPaymentRail;
  authority!: BudgetAuthority;
  lostAck: LostAckEventStore | undefined;
  private commands = 0;
  private ids = 0;

  private constructor(
    readonly nc: NatsConnection,
    readonly names: TallyNames,
    readonly store: JetStreamEventStore,
    readonly options: FixtureOptions,
  ) {
    this.rail = new SimulatedPaymentRail(options.rail ?? { mode: 'reversible_hold' });
    this.authority = this.newAuthority();
  }

  static async start(options: FixtureOptions = {}): Promise<AuthorityFixture> {
    const names = tallyNames(uniqueNamespace('ba'));
    const nc = await connectNats({
      url: sharedNatsUrl(),
      name: `test-${names.namespace}`,
      connectTimeoutMs: 5000,
      maxReconnectAttempts: -1,
      reconnectTimeWaitMs: 100,
    });
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    await ensureStream(
      jsm,
      testEventStreamSpec(names.budgetEventsStream, [names.budgetEventsWildcard], 512 * 1024 * 1024),
    );
    const store = new JetStreamEventStore(js, jsm, {
      stream: names.budgetEventsStream,
      registry: budgetEventRegistry(),
      publishTimeoutMs: 5000,
      loadEventsMax: 1_000_000,
      loadIdleTimeoutMs: 5000,
    });
    return new AuthorityFixture(nc, names, store, options);
  }

  /** Another authority process on the same stream: its own cache, queue and (shared) signer and rail. */
  newAuthority(extra: { store?: EventStore } = {}): BudgetAuthority {
    if (this.options.lostAck && !extra.store) this.lostAck = new LostAckEventStore(this.store, this.options.lostAck);
    const store = extra.store ?? this.lostAck ?? this.store;
    const clock = { nowMs: () => this.nowMs };
    const ids = {
      newId: () => `${Date.now().toString(36)}_${++this.ids}_${Math.floor(Math.random() * 1e9).toString(36)}`,
    };
    return new BudgetAuthority(
      {
        store,
        subjectOf: (root) => this.names.budgetEventSubject(root),
        clock,
        ids,
        rail: this.rail,
        signer: this.signer,
        hook: this.hook,
      },
      { ...LIMITS, ...this.options.limits },
    );
  }

  async issue(
    grants: readonly Grant[],
    extra: { parent_id?: string; budget_share_units?: bigint } = {},
  ): Promise<IssuedCapability> {
    const out = await this.authority.issue({ subject_public_key: 'agent-key', ttl_seconds: 3600, grants, ...extra });
    if (!out.ok) throw new Error(`issue rejected: ${out.rejection.message}`);
    return out.value;
  }

  admitCommand(requestId: string, capability: IssuedCapability, extra: Partial<AdmitCommand> = {}): AdmitCommand {
    const grant = capability.grants[0]!;
    return {
      command_id: `cmd-${++this.commands}`,
      request_id: requestId,
      token: capability.token,
      server_id: grant.server_id,
      tool_name: grant.tool_name,
      parameters_hash: 'params-hash',
      context: { kind: 'standalone' },
      ...extra,
    };
  }

  admit(requestId: string, capability: IssuedCapability, extra: Partial<AdmitCommand> = {}) {
    return this.authority.admit(this.admitCommand(requestId, capability, extra));
  }

  settle(holdId: string, outcome: Parameters<BudgetAuthority['settle']>[0]['outcome']) {
    // An admin's authority, as the HTTP API passes it: these tests are about settlement, not who may settle.
    return this.authority.settle({
      command_id: `cmd-${++this.commands}`,
      hold_id: holdId,
      outcome,
      authorization: { kind: 'operator' },
    });
  }

  async usage(capability: IssuedCapability, grantIndex = 0) {
    const usage = await this.authority.usage(capability.id);
    const grant = usage!.grants[grantIndex]!;
    return { invocations: grant.invocation_count, committed: grant.committed_cost_units };
  }

  async kinds(capability: IssuedCapability, grantIndex = 0): Promise<string[]> {
    return ((await this.authority.events(capability.id, { grant_index: grantIndex, limit: 100 })) ?? []).map(
      (e) => e.kind,
    );
  }

  async dispose(): Promise<void> {
    const jsm = await jetstreamManager(this.nc);
    await jsm.streams.delete(this.names.budgetEventsStream).catch(() => undefined);
    await this.nc.drain();
  }
}

export const holdOf = (requestId: string, capability: IssuedCapability, grantIndex = 0) =>
  `budget-hold:${requestId}:${capability.id}:${grantIndex}`;

/** A replica that dies right after an append holding the given event type reached the stream: nothing after it runs. */
export class DyingStore implements EventStore {
  dead = false;
  constructor(
    private readonly inner: EventStore,
    private readonly afterType: string,
  ) {}

  async append(
    subject: string,
    events: readonly Omit<EventMessage, 'schemaVersion'>[],
    expectedSequence: number,
  ): Promise<AppendResult> {
    if (this.dead) throw new Error('replica is dead');
    const result = await this.inner.append(subject, events, expectedSequence);
    if (events.some((e) => e.type === this.afterType)) {
      this.dead = true;
      throw new Error('replica killed after the append');
    }
    return result;
  }

  load(subject: string, afterSequence?: number): Promise<LoadResult> {
    if (this.dead) return Promise.reject(new Error('replica is dead'));
    return this.inner.load(subject, afterSequence);
  }
}
