// Group commit: the steps waiting on one tree are decided in order, each on the state the
// ones before it leave, and their events go out as ONE commit. A hot tree then pays one
// round trip for many Admits' steps instead of one each, and the commit is atomic, so a
// step never lands without the steps its decision relied on.
import {
  decideSequence,
  evolve,
  type BudgetCommand,
  type BudgetEvent,
  type RecordedBudgetEvent,
  storedEventId,
  type Rejection,
  type TreeState,
} from '@tally/budget-domain';

export type StepDecision =
  | { readonly kind: 'events'; readonly events: readonly BudgetEvent[] }
  | { readonly kind: 'rejected'; readonly rejection: Rejection }
  /** The plan or the decider threw (a bug): only this step fails, the others of the group go on. */
  | { readonly kind: 'failed'; readonly error: unknown };

export interface GroupDecision {
  /** One decision per included plan, in order. */
  readonly steps: readonly StepDecision[];
  /** All events of the included plans, in commit order. */
  readonly events: readonly BudgetEvent[];
}

export interface GroupLimits {
  /** Most steps in one commit. */
  readonly stepsMax: number;
  /** Most events in one commit; a first step bigger than this still goes, alone. */
  readonly eventsMax: number;
}

/**
 * Decides plans from the front until a limit is reached or a plan's events touch a hold an
 * earlier plan of the group touched. Event ids embed the commit index of a hold's earlier
 * events (`{hold}:capture-invocation:{authorize_commit_index}`), which is only known once
 * that commit is acknowledged; such a plan waits for the next commit and is decided again.
 */
export function decideGroup(
  plans: readonly ((state: TreeState) => readonly BudgetCommand[])[],
  state: TreeState,
  limits: GroupLimits,
): GroupDecision {
  const steps: StepDecision[] = [];
  const events: BudgetEvent[] = [];
  const touched = new Set<string>();
  let current = state;
  for (const plan of plans) {
    if (steps.length >= limits.stepsMax) break;
    let decision: ReturnType<typeof decideSequence>;
    try {
      decision = decideSequence(plan(current), current);
    } catch (error) {
      steps.push({ kind: 'failed', error });
      continue;
    }
    if (!decision.ok) {
      steps.push({ kind: 'rejected', rejection: decision.rejection });
      continue;
    }
    const holds = decision.events.map(holdOf).filter((id): id is string => id !== undefined);
    const overfull = steps.length > 0 && events.length + decision.events.length > limits.eventsMax;
    if (overfull || holds.some((id) => touched.has(id))) break;
    for (const id of holds) touched.add(id);
    steps.push({ kind: 'events', events: decision.events });
    events.push(...decision.events);
    current = decision.state;
  }
  return { steps, events };
}

function holdOf(event: BudgetEvent): string | undefined {
  const data = event.data as { readonly hold_id?: unknown };
  return typeof data.hold_id === 'string' ? data.hold_id : undefined;
}

/** The group's events with their real commit index and positions, and the state after each step. */
export function recordGroup(
  state: TreeState,
  group: GroupDecision,
  commitIndex: number,
): { states: TreeState[]; recorded: RecordedBudgetEvent[][] } {
  const states: TreeState[] = [];
  const recorded: RecordedBudgetEvent[][] = [];
  let current = state;
  let position = 0;
  for (const step of group.steps) {
    const events =
      step.kind === 'events'
        ? step.events.map(
            (event) =>
              ({
                ...event,
                event_id: storedEventId(event.type, event.event_id, event.data, commitIndex),
                commit_index: commitIndex,
                commit_position: position++,
              }) as RecordedBudgetEvent,
          )
        : [];
    current = events.reduce(evolve, current);
    states.push(current);
    recorded.push(events);
  }
  return { states, recorded };
}
