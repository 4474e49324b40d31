// Durable steps on one delegation tree: load (from an in-memory cache plus the stream's
// tail), decide, append with optimistic concurrency, and on a conflict catch up from the
// last known sequence and decide again, within a bound. A lost acknowledgement is never
// guessed at: the stream is read back and the caller learns which event ids are in it.
// Steps that wait on the same tree are group-committed: decided in order and appended as
// one commit (tree-group.ts), so a hot tree pays one round trip for many of them.
import {
  evolve,
  initialState,
  type BudgetCommand,
  type RecordedBudgetEvent,
  type Rejection,
  type TreeState,
} from '@tally/budget-domain';
import { AppendOutcomeUnknown, ConcurrencyConflict, RetriesExhausted, type EventStore } from '@tally/eventing';
import { fromStored, toMessage } from './event-codec.js';
import { KeyedQueue } from './keyed-queue.js';
import type { Clock } from './ports.js';
import { decideGroup, recordGroup, type GroupDecision, type GroupLimits, type StepDecision } from './tree-group.js';

export interface TreeStoreLimits {
  readonly appendAttemptsMax: number;
  readonly truthReadAttemptsMax: number;
  readonly truthReadDelayMs: number;
  readonly treeCacheMax: number;
  readonly queueWaitingMax: number;
  /** Most waiting steps of one tree group-committed in one append. Default GROUP_STEPS_MAX. */
  readonly groupStepsMax?: number;
  /** Most events of one group commit (a single bigger step still goes alone). Default GROUP_EVENTS_MAX. */
  readonly groupEventsMax?: number;
}

/** Measured with bench/admit-latency.ts: far above the steps one round trip accumulates at a few thousand Admits/s. */
export const GROUP_STEPS_MAX = 64;
/** Below the event store's default commit bound (1024), leaving room for one large step. */
export const GROUP_EVENTS_MAX = 512;

interface WaitingStep {
  readonly plan: Plan;
  readonly resolve: (outcome: StepOutcome) => void;
  readonly reject: (error: unknown) => void;
}

export interface TreeView {
  readonly state: TreeState;
  readonly lastSequence: number;
}

export type StepOutcome =
  | { readonly kind: 'committed'; readonly state: TreeState; readonly events: readonly RecordedBudgetEvent[] }
  | { readonly kind: 'rejected'; readonly state: TreeState; readonly rejection: Rejection }
  /** The append's acknowledgement was lost. `present` holds the event ids the stream has; undefined when it could not be read. */
  | {
      readonly kind: 'unknown';
      readonly state: TreeState;
      readonly eventIds: readonly string[];
      readonly present: ReadonlySet<string> | undefined;
    };

export type Plan = (state: TreeState) => readonly BudgetCommand[];

/** Waits `ms` before a re-read; a port so that a simulation can run it on virtual time. */
export type TreeStoreSleep = (ms: number) => Promise<void>;

const timerSleep: TreeStoreSleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A step's outcome inside a group, or the bug that failed only that step. */
type GroupStepResult = StepOutcome | { readonly kind: 'failed'; readonly error: unknown };

export class TreeStore {
  private readonly cache = new Map<string, TreeView>();
  private readonly queue: KeyedQueue;
  private readonly waiting = new Map<string, WaitingStep[]>();
  private readonly firstReads = new Map<string, Promise<TreeState>>();
  private readonly group: GroupLimits;

  constructor(
    private readonly store: EventStore,
    private readonly subjectOf: (rootId: string) => string,
    private readonly clock: Clock,
    private readonly limits: TreeStoreLimits,
    private readonly sleep: TreeStoreSleep = timerSleep,
  ) {
    this.queue = new KeyedQueue(limits.queueWaitingMax);
    this.group = {
      stepsMax: limits.groupStepsMax ?? GROUP_STEPS_MAX,
      eventsMax: limits.groupEventsMax ?? GROUP_EVENTS_MAX,
    };
    if (!(this.group.stepsMax >= 1 && this.group.eventsMax >= 1))
      throw new Error('groupStepsMax and groupEventsMax must be at least 1');
  }

  /** The tree's state, caught up with the stream. */
  read(rootId: string): Promise<TreeState> {
    return this.queue.run(rootId, async () => (await this.catchUp(rootId)).view.state);
  }

  /**
   * The cached state without a read of the stream, or a caught-up read when the tree is not
   * cached. Good for checks that an append re-validates anyway (optimistic concurrency).
   */
  async cachedOrRead(rootId: string): Promise<TreeState> {
    const cached = this.cache.get(rootId)?.state;
    if (cached) return cached;
    // A burst of Admits on a tree this process has not loaded yet shares one read, not one each.
    let reading = this.firstReads.get(rootId);
    if (!reading) {
      reading = this.read(rootId).finally(() => this.firstReads.delete(rootId));
      this.firstReads.set(rootId, reading);
    }
    return reading;
  }

  /** The cached view of a tree, without any read of the stream: what an audit holds up against a replay. */
  peek(rootId: string): TreeView | undefined {
    return this.cache.get(rootId);
  }

  /** Roots this process has loaded: what a sweeper visits. */
  knownRoots(): string[] {
    return [...this.cache.keys()];
  }

  /**
   * Decides and appends one step. Each step schedules one drain on the tree's queue, so the
   * queue's bound still counts waiting steps; a drain commits every step waiting by then
   * (up to the group limits), and a later drain whose step is already done returns at once.
   */
  step(rootId: string, plan: Plan): Promise<StepOutcome> {
    return new Promise<StepOutcome>((resolve, reject) => {
      const entry: WaitingStep = { plan, resolve, reject };
      this.waiting.set(rootId, [...(this.waiting.get(rootId) ?? []), entry]);
      this.queue
        .run(rootId, () => this.drain(rootId))
        .catch((error: unknown) => {
          // Only a refused drain (QueueFull) lands here; its step may still be waiting for nobody.
          const list = this.waiting.get(rootId) ?? [];
          if (!list.includes(entry)) return;
          this.waiting.set(
            rootId,
            list.filter((w) => w !== entry),
          );
          reject(error);
        });
    });
  }

  private async drain(rootId: string): Promise<void> {
    const group = (this.waiting.get(rootId) ?? []).slice(0, this.group.stepsMax);
    if (group.length === 0) return;
    this.waiting.set(rootId, (this.waiting.get(rootId) ?? []).slice(group.length));
    let outcomes: GroupStepResult[];
    try {
      outcomes = await this.stepGroup(
        rootId,
        group.map((w) => w.plan),
      );
    } catch (error) {
      for (const w of group) w.reject(error);
      return;
    }
    outcomes.forEach((outcome, i) =>
      outcome.kind === 'failed' ? group[i]!.reject(outcome.error) : group[i]!.resolve(outcome),
    );
    // Steps the group left out (see decideGroup) go first in the next commit.
    this.waiting.set(rootId, [...group.slice(outcomes.length), ...(this.waiting.get(rootId) ?? [])]);
    if (this.waiting.get(rootId)!.length === 0) this.waiting.delete(rootId);
  }

  /** Decides the plans as one group and appends it; returns one outcome per step the group included. */
  private async stepGroup(rootId: string, plans: readonly Plan[]): Promise<GroupStepResult[]> {
    const subject = this.subjectOf(rootId);
    for (let attempt = 1; attempt <= this.limits.appendAttemptsMax; attempt++) {
      const cached = this.cache.get(rootId);
      const view = cached ?? (await this.catchUp(rootId)).view;
      const group = decideGroup(plans, view.state, this.group);
      // A rejection or a no-op on a stale cache may be wrong: confirm it against the stream.
      if (
        cached &&
        group.steps.some((s) => s.kind !== 'events' || s.events.length === 0) &&
        (await this.catchUp(rootId)).loaded.length > 0
      )
        continue;
      if (group.events.length === 0) return group.steps.map((s) => resultOf(s, view.state, []));
      const occurredAt = new Date(this.clock.nowMs()).toISOString();
      const messages = group.events.map((event) => toMessage(event, rootId, occurredAt));
      try {
        const result = await this.store.append(subject, messages, view.lastSequence);
        // A duplicate means another writer committed the same event id first: decide again on the truth.
        if (result.duplicates.some(Boolean)) {
          await this.catchUp(rootId);
          continue;
        }
        const { states, recorded } = recordGroup(view.state, group, result.sequences[0]!);
        this.remember(rootId, { state: states.at(-1)!, lastSequence: result.lastSequence });
        return group.steps.map((s, i) => resultOf(s, states[i]!, recorded[i]!));
      } catch (error) {
        if (error instanceof ConcurrencyConflict) {
          // A conflict with nothing new to read means part of the batch was dropped as a duplicate
          // of an event this decision did not account for: a bug, not contention, so stop here.
          if ((await this.catchUp(rootId)).loaded.length === 0)
            throw new Error(
              `append to ${subject} conflicts without new events: ${messages.map((m) => m.eventId).join(', ')}`,
            );
          continue;
        }
        // Only a lost acknowledgement is read back; anything else (a commit above its limits, an invalid event) is a bug.
        if (!(error instanceof AppendOutcomeUnknown)) throw error;
        return this.readGroupTruth(rootId, group);
      }
    }
    throw new RetriesExhausted(subject, this.limits.appendAttemptsMax);
  }

  /**
   * After a lost acknowledgement: which of the group's event ids reached the stream? The
   * commit is atomic, so each step sees all of its ids or none. A rejection decided inside
   * the group stands whatever happened: a denial never moves money.
   */
  private async readGroupTruth(rootId: string, group: GroupDecision): Promise<GroupStepResult[]> {
    const truth = await this.readTruth(
      rootId,
      group.events.map((e) => e.event_id),
    );
    return group.steps.map((s) => {
      if (s.kind !== 'events') return resultOf(s, truth.state, []);
      const eventIds = s.events.map((e) => e.event_id);
      const present =
        truth.present === undefined ? undefined : new Set(eventIds.filter((id) => truth.present!.has(id)));
      return { kind: 'unknown', state: truth.state, eventIds, present };
    });
  }

  private async readTruth(
    rootId: string,
    eventIds: readonly string[],
  ): Promise<{ state: TreeState; present: ReadonlySet<string> | undefined }> {
    for (let attempt = 1; attempt <= this.limits.truthReadAttemptsMax; attempt++) {
      try {
        const { view, loaded } = await this.catchUp(rootId);
        const wanted = new Set(eventIds);
        return { state: view.state, present: new Set(loaded.map((e) => e.event_id).filter((id) => wanted.has(id))) };
      } catch {
        await this.sleep(this.limits.truthReadDelayMs);
      }
    }
    return { state: this.cache.get(rootId)?.state ?? initialState(), present: undefined };
  }

  private async catchUp(rootId: string): Promise<{ view: TreeView; loaded: RecordedBudgetEvent[] }> {
    const cached = this.cache.get(rootId) ?? { state: initialState(), lastSequence: 0 };
    const { events, lastSequence } = await this.store.load(this.subjectOf(rootId), cached.lastSequence);
    const loaded = events.map(fromStored);
    const view = {
      state: loaded.reduce(evolve, cached.state),
      lastSequence: Math.max(lastSequence, cached.lastSequence),
    };
    this.remember(rootId, view);
    return { view, loaded };
  }

  /** Least recently used trees are dropped first; a dropped tree is reloaded from the stream. */
  private remember(rootId: string, view: TreeView): void {
    this.cache.delete(rootId);
    this.cache.set(rootId, view);
    while (this.cache.size > this.limits.treeCacheMax) this.cache.delete(this.cache.keys().next().value!);
  }
}

function resultOf(step: StepDecision, state: TreeState, events: readonly RecordedBudgetEvent[]): GroupStepResult {
  if (step.kind === 'failed') return step;
  if (step.kind === 'rejected') return { kind: 'rejected', state, rejection: step.rejection };
  return { kind: 'committed', state, events };
}
