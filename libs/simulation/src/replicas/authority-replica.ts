// One budget-authority replica: the real BudgetAuthority (tree store, group commit, every
// handler) over this replica's simulated ports, answering core requests through the real
// command mapping (the wiring), and running the expiry sweep (B20), the sweep of stranded
// holds (ADR 0059) and the reconciler (B21) on virtual-time intervals over the trees the
// stream shows need a visit, as the projection names them in production. Killing it drops every cache and every step in flight; a
// restart builds a fresh BudgetAuthority that knows only the stream.
import {
  BudgetAuthority,
  allowAllAdmissionHook,
  type AdmissionHook,
  type BudgetAuthorityLimits,
  type Signer,
} from '@tally/budget-application';
import type { TallyNames } from '@tally/contracts';
import type { CommandReply } from '@tally/platform-nest';
import { isBugSignal } from '../check/bug-signals.js';
import type { Wire } from '../core/remote.js';
import { Owner, type Scheduler } from '../core/scheduler.js';
import type { RequestBus } from '../net/request-bus.js';
import { scheduledHook, type SimLeases } from '../ports/sim-hook.js';
import { scheduledRail } from '../ports/scheduled-rail.js';
import type { SimRail } from '../ports/sim-rail.js';
import { ScheduledEventStore, type StoreNetwork } from '../store/scheduled-event-store.js';
import type { SimEventStore } from '../store/sim-event-store.js';
import type { SimWiring } from '../world/wiring.js';

export interface AuthorityReplicaDeps {
  readonly name: string;
  readonly scheduler: Scheduler;
  readonly names: TallyNames;
  readonly store: SimEventStore;
  readonly storeNet: StoreNetwork;
  readonly wire: Wire;
  readonly bus: RequestBus;
  readonly rail: SimRail;
  readonly leases: SimLeases | undefined;
  readonly signer: Signer;
  readonly limits: BudgetAuthorityLimits;
  readonly wiring: SimWiring;
  /** This replica's clock skew against the virtual time (replicas' clocks never agree exactly). */
  readonly skewMs: () => number;
  /** The trees a sweep must visit now: uncaptured holds past their TTL, and open ambiguities (the projection's query). */
  readonly expiredTrees: (nowMs: number) => string[];
  readonly ambiguousTrees: () => string[];
  /** The trees the sweep of stranded holds visits now (ADR 0059). */
  readonly strandedTrees: (nowMs: number) => string[];
  readonly sweepIntervalMs: number;
  readonly reconcileIntervalMs: number;
  readonly note: (line: string) => void;
  /** Reports an error that only a bug can raise (check/bug-signals.ts). */
  readonly bug: (detail: string) => void;
}

export class AuthorityReplica {
  private incarnation = 0;
  owner: Owner = new Owner('unstarted');
  authority: BudgetAuthority | undefined;

  constructor(private readonly deps: AuthorityReplicaDeps) {}

  get name(): string {
    return this.deps.name;
  }

  get alive(): boolean {
    return this.owner.alive && this.authority !== undefined;
  }

  start(): void {
    const d = this.deps;
    const owner = new Owner(`${d.name}.${++this.incarnation}`);
    this.owner = owner;
    let ids = 0;
    const hook: AdmissionHook = d.leases ? scheduledHook(d.leases, d.wire, owner) : allowAllAdmissionHook;
    this.authority = new BudgetAuthority(
      {
        store: new ScheduledEventStore(d.store, d.storeNet, owner),
        subjectOf: (rootId) => d.names.budgetEventSubject(rootId),
        clock: { nowMs: () => d.scheduler.nowMs + d.skewMs() },
        ids: { newId: () => `${d.name}_${this.incarnation}_${++ids}` },
        rail: scheduledRail(d.rail, d.wire, owner),
        signer: d.signer,
        hook,
        sleep: (ms) => d.scheduler.sleep(owner, ms, undefined, 'truth re-read pause'),
      },
      d.limits,
    );
    const authority = this.authority;
    d.bus.register({ owner, handle: (command, id, payload) => this.handle(authority, command, id, payload) });
    this.every(owner, d.sweepIntervalMs, 'expiry sweep', async () => {
      const roots = d.expiredTrees(d.scheduler.nowMs + d.skewMs());
      if (roots.length > 0) await authority.expireHolds(roots);
    });
    this.every(owner, d.sweepIntervalMs, 'stranded-hold sweep', async () => {
      const roots = d.strandedTrees(d.scheduler.nowMs + d.skewMs());
      if (roots.length > 0) await authority.unwindStranded(roots);
    });
    this.every(owner, d.reconcileIntervalMs, 'reconciler', async () => {
      for (const root of d.ambiguousTrees()) await authority.reconcile(root);
    });
    d.note(`${owner.name} started`);
  }

  kill(): void {
    this.deps.scheduler.kill(this.owner);
    this.deps.bus.unregister(this.owner);
    this.authority = undefined;
    this.deps.note(`${this.owner.name} killed`);
  }

  /** A handler that fails in a way the transport does not map is answered `unavailable`, as the core server does. */
  private async handle(
    authority: BudgetAuthority,
    command: string,
    commandId: string,
    payload: unknown,
  ): Promise<CommandReply<unknown>> {
    try {
      return await this.deps.wiring.handle(authority, command, commandId, payload);
    } catch (error) {
      if (isBugSignal(error)) this.deps.bug(`${this.owner.name} ${command} ${commandId}: ${describe(error)}`);
      this.deps.note(`${this.owner.name} ${command} ${commandId} failed: ${describe(error)}`);
      return { ok: false, error: { type: 'unavailable', message: 'the command could not be handled now; re-send it' } };
    }
  }

  /** A background loop of this incarnation: it stops when the replica dies (its sleeps never end). */
  private every(owner: Owner, intervalMs: number, what: string, body: () => Promise<void>): void {
    const loop = async () => {
      for (;;) {
        await this.deps.scheduler.sleep(owner, intervalMs, undefined, what);
        try {
          await body();
        } catch (error) {
          if (isBugSignal(error)) this.deps.bug(`${owner.name} ${what}: ${describe(error)}`);
          this.deps.note(`${owner.name} ${what} failed: ${describe(error)}`);
        }
      }
    };
    void loop();
  }
}

export function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
