// Durable steps on one delegation tree: load (from an in-memory cache plus the stream's
// tail), decide, append with optimistic concurrency, and on a conflict catch up from the
// last known sequence and decide again, within a bound. A lost acknowledgement is never
// guessed at: the stream is read back and the caller learns which event ids are in it.
import { decideSequence, evolve, initialState, type BudgetCommand, type RecordedBudgetEvent, type Rejection, type TreeState } from '@tally/budget-domain';
import { AppendOutcomeUnknown, ConcurrencyConflict, RetriesExhausted, type EventStore } from '@tally/eventing';
import { fromStored, toMessage } from './event-codec.js';
import { KeyedQueue } from './keyed-queue.js';
import type { Clock } from './ports.js';

export interface TreeStoreLimits {
  readonly appendAttemptsMax: number;
  readonly truthReadAttemptsMax: number;
  readonly truthReadDelayMs: number;
  readonly treeCacheMax: number;
  readonly queueWaitingMax: number;
}

interface TreeView {
  readonly state: TreeState;
  readonly lastSequence: number;
}

export type StepOutcome =
  | { readonly kind: 'committed'; readonly state: TreeState; readonly events: readonly RecordedBudgetEvent[] }
  | { readonly kind: 'rejected'; readonly state: TreeState; readonly rejection: Rejection }
  /** The append's acknowledgement was lost. `present` holds the event ids the stream has; undefined when it could not be read. */
  | { readonly kind: 'unknown'; readonly state: TreeState; readonly eventIds: readonly string[]; readonly present: ReadonlySet<string> | undefined };

export type Plan = (state: TreeState) => readonly BudgetCommand[];

export class TreeStore {
  private readonly cache = new Map<string, TreeView>();
  private readonly queue: KeyedQueue;

  constructor(
    private readonly store: EventStore,
    private readonly subjectOf: (rootId: string) => string,
    private readonly clock: Clock,
    private readonly limits: TreeStoreLimits,
  ) {
    this.queue = new KeyedQueue(limits.queueWaitingMax);
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
    return this.cache.get(rootId)?.state ?? this.read(rootId);
  }

  /** Roots this process has loaded: what a sweeper visits. */
  knownRoots(): string[] {
    return [...this.cache.keys()];
  }

  step(rootId: string, plan: Plan): Promise<StepOutcome> {
    return this.queue.run(rootId, () => this.stepNow(rootId, plan));
  }

  private async stepNow(rootId: string, plan: Plan): Promise<StepOutcome> {
    const subject = this.subjectOf(rootId);
    for (let attempt = 1; attempt <= this.limits.appendAttemptsMax; attempt++) {
      const view = this.cache.get(rootId) ?? (await this.catchUp(rootId)).view;
      const decision = decideSequence(plan(view.state), view.state);
      if (!decision.ok || decision.events.length === 0) {
        // A rejection or a no-op on a stale cache may be wrong: confirm it against the stream.
        const fresh = await this.catchUp(rootId);
        if (fresh.loaded.length > 0) continue;
        return decision.ok ? { kind: 'committed', state: view.state, events: [] } : { kind: 'rejected', state: view.state, rejection: decision.rejection };
      }
      const occurredAt = new Date(this.clock.nowMs()).toISOString();
      const messages = decision.events.map((event) => toMessage(event, rootId, occurredAt));
      try {
        const result = await this.store.append(subject, messages, view.lastSequence);
        // A duplicate means another writer committed the same event id first: decide again on the truth.
        if (result.duplicates.some(Boolean)) {
          await this.catchUp(rootId);
          continue;
        }
        // One append is one commit: every event has its sequence, and its place in it.
        const events = decision.events.map((event, i) => ({ ...event, commit_index: result.sequences[i]!, commit_position: i }) as RecordedBudgetEvent);
        const state = events.reduce(evolve, view.state);
        this.remember(rootId, { state, lastSequence: result.lastSequence });
        return { kind: 'committed', state, events };
      } catch (error) {
        if (error instanceof ConcurrencyConflict) {
          // A conflict with nothing new to read means part of the batch was dropped as a duplicate
          // of an event this decision did not account for: a bug, not contention, so stop here.
          if ((await this.catchUp(rootId)).loaded.length === 0) throw new Error(`append to ${subject} conflicts without new events: ${messages.map((m) => m.eventId).join(', ')}`);
          continue;
        }
        // Only a lost acknowledgement is read back; anything else (a commit above its limits, an invalid event) is a bug.
        if (!(error instanceof AppendOutcomeUnknown)) throw error;
        return this.readTruth(rootId, messages.map((m) => m.eventId));
      }
    }
    throw new RetriesExhausted(subject, this.limits.appendAttemptsMax);
  }

  /** After a lost acknowledgement: which of the event ids did reach the stream? */
  private async readTruth(rootId: string, eventIds: readonly string[]): Promise<StepOutcome> {
    for (let attempt = 1; attempt <= this.limits.truthReadAttemptsMax; attempt++) {
      try {
        const { view, loaded } = await this.catchUp(rootId);
        const wanted = new Set(eventIds);
        const present = new Set(loaded.map((e) => e.event_id).filter((id) => wanted.has(id)));
        return { kind: 'unknown', state: view.state, eventIds, present };
      } catch {
        await new Promise((resolve) => setTimeout(resolve, this.limits.truthReadDelayMs));
      }
    }
    return { kind: 'unknown', state: this.cache.get(rootId)?.state ?? initialState(), eventIds, present: undefined };
  }

  private async catchUp(rootId: string): Promise<{ view: TreeView; loaded: RecordedBudgetEvent[] }> {
    const cached = this.cache.get(rootId) ?? { state: initialState(), lastSequence: 0 };
    const { events, lastSequence } = await this.store.load(this.subjectOf(rootId), cached.lastSequence);
    const loaded = events.map(fromStored);
    const view = { state: loaded.reduce(evolve, cached.state), lastSequence: Math.max(lastSequence, cached.lastSequence) };
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
