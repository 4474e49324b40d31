// Everything one run is made of, built from the seed: the scheduler and its trace, the
// streams and their stores, the rail, the hook, the provider, the request bus, the work
// queue, the replicas of both services, and the checker that watches them.
import { budgetEventRegistry, type BudgetAuthorityLimits } from '@tally/budget-application';
import { tallyNames } from '@tally/contracts';
import { workEventRegistry, type PriceTable } from '@tally/orchestrator-application';
import { Checker } from '../check/checker.js';
import { randomnessOf, type Randomness } from '../core/prng.js';
import { Owner, Scheduler } from '../core/scheduler.js';
import { Trace } from '../core/trace.js';
import { RequestBus } from '../net/request-bus.js';
import { SimLeases } from '../ports/sim-hook.js';
import { ProviderServer } from '../ports/sim-provider.js';
import { SimRail } from '../ports/sim-rail.js';
import { SimSigner } from '../ports/sim-signer.js';
import { AuthorityReplica } from '../replicas/authority-replica.js';
import { OrchestratorReplica } from '../replicas/orchestrator-replica.js';
import { WorkQueue } from '../replicas/work-queue.js';
import { SimEventStore } from '../store/sim-event-store.js';
import { SimStream, type SimStreamConfig } from '../store/sim-stream.js';
import { Faults, type FaultKind, type FaultRates } from './faults.js';
import { shapeOf, type WorldShape } from './shape.js';
import type { SimWiring } from './wiring.js';

/** 2026-01-01T00:00:00Z: the virtual clock starts here, plus a seeded offset. */
const EPOCH_MS = 1_767_225_600_000;
const DAY_MS = 86_400_000;

export const ACK_WAIT_MS = 30_000;
export const SIM_PRICE = { input_per_mtok_units: 1_000_000, output_per_mtok_units: 2_000_000, currency: 'USD' };

export interface WorldOptions {
  readonly seed: number;
  readonly faults: ReadonlySet<FaultKind>;
  readonly rates: FaultRates;
  readonly keepTrace: boolean;
  readonly wiring: SimWiring;
}

export class World {
  readonly trace: Trace;
  readonly scheduler: Scheduler;
  readonly rng: Randomness;
  readonly faults: Faults;
  readonly shape: WorldShape;
  readonly names = tallyNames('sim');
  readonly startMs: number;
  readonly budgetStream: SimStream;
  readonly workStream: SimStream;
  readonly budgetStore: SimEventStore;
  readonly workStore: SimEventStore;
  readonly signer = new SimSigner();
  readonly checker: Checker;
  readonly rail: SimRail;
  readonly leases: SimLeases | undefined;
  readonly provider: ProviderServer;
  readonly bus: RequestBus;
  readonly queue: WorkQueue;
  readonly authorities: AuthorityReplica[] = [];
  readonly orchestrators: OrchestratorReplica[] = [];
  /** The callers (API clients, tool callers): they never die, but they give up. */
  readonly client = new Owner('client');
  readonly prices: PriceTable = { priceOf: (provider) => (provider === 'sim' ? SIM_PRICE : undefined) };

  constructor(readonly options: WorldOptions) {
    this.trace = new Trace(options.keepTrace);
    this.rng = randomnessOf(options.seed);
    this.shape = shapeOf(this.rng.workload);
    this.startMs = EPOCH_MS + this.rng.workload.int(DAY_MS);
    this.scheduler = new Scheduler(this.startMs, this.trace);
    this.faults = new Faults(options.faults, options.rates, this.rng.faults);
    const now = () => this.scheduler.nowMs;
    const stream = (name: string): SimStreamConfig => ({
      name,
      maxBytes: -1,
      maxMsgSizeBytes: 1024 * 1024,
      duplicateWindowMs: 120_000,
    });
    this.budgetStream = new SimStream(stream(this.names.budgetEventsStream), budgetEventRegistry(), now);
    this.workStream = new SimStream(stream(this.names.workEventsStream), workEventRegistry(), now);
    this.budgetStore = new SimEventStore(this.budgetStream, {
      registry: budgetEventRegistry(),
      loadEventsMax: 1_000_000,
    });
    this.workStore = new SimEventStore(this.workStream, { registry: workEventRegistry(), loadEventsMax: 100_000 });
    this.checker = new Checker(
      this.names,
      this.budgetStream,
      this.workStream,
      this.signer,
      () => `step ${this.scheduler.steps}`,
      () => this.scheduler.nowMs,
    );
    const violation = (detail: string) => this.checker.fail(detail);
    this.rail = new SimRail(this.shape.paymentMode, this.faults, now);
    this.leases = this.shape.leases ? new SimLeases(this.faults) : undefined;
    this.provider = new ProviderServer(this.checker.shadow, this.faults, this.rng.provider, violation);
    this.bus = new RequestBus(
      { scheduler: this.scheduler, latency: this.rng.network, faults: this.faults, latencyMs: 1 },
      violation,
    );
    this.queue = new WorkQueue(this.scheduler, this.rng.schedule, this.faults, {
      ackWaitMs: ACK_WAIT_MS,
      deliveriesMax: 100,
      nakDelayMs: 500,
      latencyMs: 1,
    });
    for (let i = 1; i <= this.shape.authorities; i++) this.authorities.push(this.authority(`a${i}`));
    for (let i = 1; i <= this.shape.orchestrators; i++) this.orchestrators.push(this.orchestrator(`o${i}`));
  }

  note(line: string): void {
    this.trace.record(`  ${this.scheduler.nowMs} ${line}`);
  }

  get storeNet() {
    return {
      scheduler: this.scheduler,
      latency: this.rng.network,
      faults: this.faults,
      timeoutMs: 5_000,
      latencyMs: 1,
    };
  }

  limits(): BudgetAuthorityLimits {
    return {
      appendAttemptsMax: 32,
      truthReadAttemptsMax: 5,
      truthReadDelayMs: 100,
      treeCacheMax: this.shape.treeCacheMax,
      queueWaitingMax: 8_192,
      holdTtlMs: this.shape.holdTtlMs,
      nonceTtlMs: 30_000,
      requireExecutionNonce: this.shape.requireExecutionNonce,
      delegationDepthMax: 16,
      grantsPerCapabilityMax: 64,
      capabilityTtlMaxMs: 365 * DAY_MS,
      expireHoldsPerStepMax: 256,
      mutationListLimitMax: 1_000,
      receiptAppendAttemptsMax: 3,
      holdIncreasesMax: 4,
      concurrencyRetryAfterMs: 1_000,
      captureWithAuthorize: this.shape.captureWithAuthorize,
      // The sweep that applies it runs outside the simulated world (a background task); the default stands.
      unsettledGraceMs: 600_000,
    };
  }

  private authority(name: string): AuthorityReplica {
    const skew = this.rng.workload.range(-50, 50);
    return new AuthorityReplica({
      name,
      scheduler: this.scheduler,
      names: this.names,
      store: this.budgetStore,
      storeNet: this.storeNet,
      wire: { scheduler: this.scheduler, latency: this.rng.network, latencyMs: 5 },
      bus: this.bus,
      rail: this.rail,
      leases: this.leases,
      signer: this.signer,
      limits: this.limits(),
      wiring: this.options.wiring,
      skewMs: () => skew,
      expiredTrees: (nowMs) => this.checker.expiredTrees(nowMs),
      ambiguousTrees: () => this.checker.ambiguousTrees(),
      strandedTrees: (nowMs) => this.checker.strandedTrees(nowMs, this.limits().unsettledGraceMs),
      sweepIntervalMs: 5_000,
      reconcileIntervalMs: 10_000,
      note: (line) => this.note(line),
      bug: (detail) => this.checker.fail(detail),
    });
  }

  private orchestrator(name: string): OrchestratorReplica {
    const skew = this.rng.workload.range(-50, 50);
    return new OrchestratorReplica(
      {
        name,
        scheduler: this.scheduler,
        names: this.names,
        store: this.workStore,
        storeNet: this.storeNet,
        bus: this.bus,
        wiring: this.options.wiring,
        provider: this.provider,
        providerWire: { scheduler: this.scheduler, latency: this.rng.network, latencyMs: 20 },
        signer: this.signer,
        queue: this.queue,
        prices: this.prices,
        jitter: this.rng.schedule,
        slots: 4,
        skewMs: () => skew,
        note: (line) => this.note(line),
        bug: (detail) => this.checker.fail(detail),
      },
      ACK_WAIT_MS,
    );
  }
}
