// One agent-orchestrator replica: the real DispatchWorker and WorkUnitRepository over this
// replica's simulated work-event store, the real budget client (the wiring's
// JetStreamBudgetPort with its proof check) over simulated core requests, and the
// simulated provider. It takes deliveries from the work queue within its slots. Killing it
// drops its deliveries in flight and the admission proofs it kept; the queue redelivers.
import type { Signer } from '@tally/budget-application';
import type { TallyNames } from '@tally/contracts';
import { DispatchWorker, WorkUnitRepository, type PriceTable } from '@tally/orchestrator-application';
import { isBugSignal } from '../check/bug-signals.js';
import type { Prng } from '../core/prng.js';
import { Owner, type Scheduler } from '../core/scheduler.js';
import { SimCommandSender, type RequestBus } from '../net/request-bus.js';
import { scheduledGateway, type ProviderServer, type ProviderWire } from '../ports/sim-provider.js';
import { ScheduledEventStore, type StoreNetwork } from '../store/scheduled-event-store.js';
import type { SimEventStore } from '../store/sim-event-store.js';
import type { SimWiring } from '../world/wiring.js';
import { describe } from './authority-replica.js';
import type { Delivery, DeliveryOutcome, QueueWorker, WorkQueue } from './work-queue.js';

export interface OrchestratorReplicaDeps {
  readonly name: string;
  readonly scheduler: Scheduler;
  readonly names: TallyNames;
  readonly store: SimEventStore;
  readonly storeNet: StoreNetwork;
  readonly bus: RequestBus;
  readonly wiring: SimWiring;
  readonly provider: ProviderServer;
  readonly providerWire: ProviderWire;
  readonly signer: Signer;
  readonly queue: WorkQueue;
  readonly prices: PriceTable;
  readonly jitter: Prng;
  readonly slots: number;
  readonly skewMs: () => number;
  readonly note: (line: string) => void;
  readonly bug: (detail: string) => void;
}

/** The orchestrator's budget settings: orchestrator.budget_timeout_ms and the port's attempts. */
const BUDGET_REPLY_TIMEOUT_MS = 5_000;
const BUDGET_ATTEMPTS_MAX = 3;
const BUDGET_RETRY_DELAY_MS = 250;
/** The dispatch workers' limits, as the app sets them (dispatch-workers.ts); recordRetryMs is 2/3 of the ack wait. */
const STEPS_MAX = 1_000;
const ABORT_POLL_MS = 1_000;
const CONFLICT_RETRIES_MAX = 5;
const PROGRESS_EVERY_MS = 2_500;

export class OrchestratorReplica implements QueueWorker {
  private incarnation = 0;
  owner: Owner = new Owner('unstarted');
  private worker: DispatchWorker | undefined;

  constructor(
    private readonly deps: OrchestratorReplicaDeps,
    private readonly ackWaitMs: number,
  ) {}

  get slots(): number {
    return this.deps.slots;
  }

  start(): void {
    const d = this.deps;
    const owner = new Owner(`${d.name}.${++this.incarnation}`);
    this.owner = owner;
    const started = new Map<string, string>();
    const store = new ScheduledEventStore(d.store, d.storeNet, owner, (_subject, events) => {
      for (const event of events)
        if (event.type === 'AttemptStarted') started.set(event.aggregateId, event.payload['hold_id'] as string);
    });
    const repository = new WorkUnitRepository(store, (id) => d.names.workEventSubject(id));
    const sender = new SimCommandSender(d.bus, owner, d.names, BUDGET_RETRY_DELAY_MS);
    const clock = { nowMs: () => d.scheduler.nowMs + d.skewMs() };
    const keys = {
      verify: (value: unknown, signature: string, keyId: string) => d.signer.verify(value, signature, keyId),
      list: () => d.signer.publicKeys(),
    };
    const budget = d.wiring.budgetPort(
      sender,
      { replyTimeoutMs: BUDGET_REPLY_TIMEOUT_MS, attemptsMax: BUDGET_ATTEMPTS_MAX },
      d.wiring.proofCheck(keys, clock.nowMs),
    );
    let ids = 0;
    this.worker = new DispatchWorker({
      repository,
      gateway: scheduledGateway(d.provider, d.providerWire, owner, (workId) => started.get(workId)),
      budget,
      prices: d.prices,
      clock,
      jitter: () => d.jitter.float(),
      sleep: (ms, signal) => d.scheduler.sleep(owner, ms, signal),
      newId: () => `${owner.name}-${++ids}`,
      options: {
        stepsMax: STEPS_MAX,
        abortPollMs: ABORT_POLL_MS,
        conflictRetriesMax: CONFLICT_RETRIES_MAX,
        recordRetryMs: Math.floor((this.ackWaitMs * 2) / 3),
      },
    });
    d.queue.attach(this);
    d.note(`${owner.name} started`);
  }

  kill(): void {
    this.deps.scheduler.kill(this.owner);
    this.worker = undefined;
    this.deps.note(`${this.owner.name} killed`);
  }

  async run(delivery: Delivery): Promise<DeliveryOutcome> {
    const worker = this.worker;
    if (!worker) return 'nak';
    let lastProgressMs = this.deps.scheduler.nowMs;
    const onProgress = () => {
      if (this.deps.scheduler.nowMs - lastProgressMs < PROGRESS_EVERY_MS) return;
      lastProgressMs = this.deps.scheduler.nowMs;
      delivery.working();
    };
    try {
      const result = await worker.process(delivery.work_id, {
        signal: delivery.signal,
        onProgress,
        credential: delivery.token,
      });
      if (result.kind === 'ended') return 'ack';
      if (result.kind === 'not_found') return 'term';
      this.deps.note(`${this.owner.name} ${delivery.work_id} superseded: ${result.reason}`);
      return 'nak';
    } catch (error) {
      if (isBugSignal(error)) this.deps.bug(`${this.owner.name} ${delivery.work_id}: ${describe(error)}`);
      this.deps.note(`${this.owner.name} ${delivery.work_id} failed: ${describe(error)}`);
      return 'nak';
    }
  }
}
