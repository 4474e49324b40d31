// Loads a work unit from its subject and appends decided events conditioned on the last
// sequence it loaded: the event is the commit point, and a conflict means "reload".
import type { EventMessage } from '@tally/contracts';
import { ConcurrencyConflict, type EventStore, type StoredEvent } from '@tally/eventing';
import {
  decide,
  foldWorkEvents,
  initialState,
  type DecidedEvent,
  type Rejection,
  type WorkCommand,
  type WorkEvent,
  type WorkUnitState,
} from '@tally/orchestrator-domain';

export interface WorkUnitView {
  readonly state: WorkUnitState;
  readonly events: readonly WorkEvent[];
  /** The subject's last sequence when loaded; appends are conditioned on it. */
  readonly lastSequence: number;
}

export type AppendOutcome =
  | { readonly kind: 'appended'; readonly view: WorkUnitView }
  | { readonly kind: 'rejected'; readonly rejection: Rejection }
  | { readonly kind: 'conflict' };

export function toWorkEvent(stored: StoredEvent): WorkEvent {
  // The store validated the payload against the registry's DTO for this type.
  return { type: stored.event.type, ...stored.event.payload } as unknown as WorkEvent;
}

export function toEventMessage(decided: DecidedEvent): Omit<EventMessage, 'schemaVersion'> {
  const { type, ...payload } = decided.event;
  return { eventId: decided.event_id, type, aggregateId: decided.event.work_id, occurredAt: decided.event.at, payload };
}

const EMPTY_VIEW: WorkUnitView = { state: initialState(), events: [], lastSequence: 0 };

/** Bound on the follow-up steps one commit may carry. */
export const FOLLOW_UPS_MAX = 4;

export class WorkUnitRepository {
  constructor(
    private readonly store: EventStore,
    private readonly subjectOf: (workId: string) => string,
  ) {}

  subject(workId: string): string {
    return this.subjectOf(workId);
  }

  async load(workId: string): Promise<WorkUnitView> {
    const loaded = await this.store.load(this.subjectOf(workId));
    const events = loaded.events.map(toWorkEvent);
    return { state: foldWorkEvents(events, initialState()), events, lastSequence: loaded.lastSequence };
  }

  /** Events appended to the unit after `afterSequence`, for watching a unit while it is worked. */
  async eventsAfter(workId: string, afterSequence: number): Promise<WorkEvent[]> {
    const loaded = await this.store.load(this.subjectOf(workId), afterSequence);
    return loaded.events.map(toWorkEvent);
  }

  /**
   * Decides `command` on the loaded view and appends the events conditioned on the view's
   * last sequence. A conflict is reported, not retried: the caller reloads and re-plans.
   */
  async apply(workId: string, view: WorkUnitView, command: WorkCommand): Promise<AppendOutcome> {
    return this.applyChain(workId, view, command, () => undefined);
  }

  /**
   * Decides `command`, then each follow-up that `next` asks for on the state the previous
   * one led to (at most FOLLOW_UPS_MAX), and appends all their events as ONE commit
   * conditioned on the view's sequence: steps that need nothing from outside in between
   * cost one round trip. A rejected follow-up is left out; the first command's rejection is
   * the answer.
   */
  async applyChain(
    workId: string,
    view: WorkUnitView,
    command: WorkCommand,
    next: (state: WorkUnitState) => WorkCommand | undefined,
  ): Promise<AppendOutcome> {
    const decision = decide(command, view.state);
    if (!decision.ok) return { kind: 'rejected', rejection: decision.rejection };
    const decided = [...decision.events];
    let state = foldWorkEvents(
      decision.events.map((d) => d.event),
      view.state,
    );
    for (let followUps = 0; followUps < FOLLOW_UPS_MAX; followUps++) {
      const followUp = next(state);
      const more = followUp ? decide(followUp, state) : undefined;
      if (!more?.ok || more.events.length === 0) break;
      decided.push(...more.events);
      state = foldWorkEvents(
        more.events.map((d) => d.event),
        state,
      );
    }
    return this.append(workId, view, decided);
  }

  private async append(workId: string, view: WorkUnitView, decided: readonly DecidedEvent[]): Promise<AppendOutcome> {
    if (decided.length === 0) return { kind: 'appended', view };
    try {
      const result = await this.store.append(this.subjectOf(workId), decided.map(toEventMessage), view.lastSequence);
      // The stream already had this commit's event ids (a re-sent submission, decided on an
      // assumed-empty unit): what is stored may differ from what was decided, so decide again on it.
      if (result.duplicates.some(Boolean)) return { kind: 'conflict' };
      const appended = decided.map((d) => d.event);
      return {
        kind: 'appended',
        view: {
          state: foldWorkEvents(appended, view.state),
          events: [...view.events, ...appended],
          lastSequence: result.lastSequence,
        },
      };
    } catch (error) {
      if (error instanceof ConcurrencyConflict) return { kind: 'conflict' };
      throw error;
    }
  }

  /**
   * Load, decide, append; on conflict reload and decide again, up to `attemptsMax` times.
   * With `expectNew`, the first try decides on an empty unit without reading it: the append
   * is conditioned on the subject being empty, so a unit that exists only costs a conflict
   * and the usual reload (a submission saves a read this way).
   */
  async execute(
    workId: string,
    command: WorkCommand,
    attemptsMax: number,
    expectNew = false,
  ): Promise<Exclude<AppendOutcome, { kind: 'conflict' }>> {
    for (let attempt = 1; attempt <= attemptsMax; attempt++) {
      const view = expectNew && attempt === 1 ? EMPTY_VIEW : await this.load(workId);
      const outcome = await this.apply(workId, view, command);
      if (outcome.kind !== 'conflict') return outcome;
    }
    throw new Error(`gave up on work ${workId} after ${attemptsMax} concurrency conflicts`);
  }
}
