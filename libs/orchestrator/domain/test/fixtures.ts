// Given/when/then helpers for the work-unit decider, and a simulated worker loop that the
// property tests drive with random provider outcomes.
import { expect } from '@jest/globals';
import {
  decide,
  foldWorkEvents,
  planNext,
  type AttemptOutcome,
  type SubmitWork,
  type WorkCommand,
  type WorkEvent,
  type WorkUnitState,
} from '../src/index.js';

export const T0 = Date.parse('2026-01-01T00:00:00.000Z');
export const at = (ms: number) => new Date(T0 + ms).toISOString();
export const PRICE = { input_per_mtok_units: 1_000_000, output_per_mtok_units: 2_000_000, currency: 'USD' };

export function submit(overrides: Partial<SubmitWork> = {}): SubmitWork {
  return {
    type: 'SubmitWork',
    command_id: 'w1:submit',
    at: at(0),
    work_id: 'w1',
    session_id: 's1',
    purpose: 'execute',
    token_fingerprint: 'fingerprint-of-tok',
    route: [{ provider: 'flaky', model: 'test-model' }],
    messages: [{ role: 'user', content: 'hello' }],
    ...overrides,
  };
}

/** Applies a command that must be accepted and returns the new events and state. */
export function run(state: WorkUnitState, command: WorkCommand): { events: WorkEvent[]; state: WorkUnitState } {
  const decision = decide(command, state);
  if (!decision.ok)
    throw new Error(`${command.type} rejected: ${decision.rejection.code}: ${decision.rejection.message}`);
  const events = decision.events.map((d) => d.event);
  return { events, state: foldWorkEvents(events, state) };
}

export function given(events: readonly WorkEvent[]): WorkUnitState {
  return foldWorkEvents(events);
}

export function expectEvents(
  state: WorkUnitState,
  command: WorkCommand,
  expected: readonly Partial<WorkEvent>[],
): WorkEvent[] {
  const { events } = run(state, command);
  expect(events).toHaveLength(expected.length);
  expected.forEach((e, i) => expect(events[i]).toMatchObject(e));
  return events;
}

let seq = 0;
const cid = (what: string) => `c${++seq}:${what}`;

/**
 * Drives one unit to its end the way a worker does: plan, then the command for the step.
 * `nextOutcome` supplies the provider's answer per dispatch (undefined = the worker dies
 * mid-dispatch, leaving the attempt open). Returns every event, in order.
 */
export function simulate(
  start: WorkUnitState,
  nextOutcome: (ordinal: number) => AttemptOutcome | undefined,
  jitter: () => number,
  stepsMax = 1000,
): WorkEvent[] {
  return simulateWith(start, nextOutcome, jitter, () => undefined, stepsMax).events;
}

/** `simulate`, also returning the incrementally evolved state and calling `observe` before each step. */
export function simulateWith(
  start: WorkUnitState,
  nextOutcome: (ordinal: number) => AttemptOutcome | undefined,
  jitter: () => number,
  observe: (state: WorkUnitState) => void,
  stepsMax = 1000,
): { events: WorkEvent[]; state: WorkUnitState } {
  let state = start;
  const all: WorkEvent[] = [];
  const apply = (command: WorkCommand) => {
    const out = run(state, command);
    state = out.state;
    all.push(...out.events);
  };
  for (let step = 0; step < stepsMax; step++) {
    observe(state);
    const j = jitter();
    const plan = planNext(state, j);
    const now = at(step * 10);
    switch (plan.kind) {
      case 'idle':
        return { events: all, state };
      case 'settle_orphan':
        apply({ type: 'SettleOrphanedAttempt', command_id: cid('orphan'), at: now, ordinal: plan.ordinal });
        break;
      case 'settle_hold':
        apply({
          type: 'RecordHoldSettled',
          command_id: cid('hold'),
          at: now,
          ordinal: plan.ordinal,
          hold_id: plan.hold_id,
        });
        break;
      case 'complete':
      case 'abort':
      case 'fail':
        apply({ type: 'ConcludeWork', command_id: cid('conclude'), at: now });
        break;
      case 'dispatch': {
        apply({
          type: 'StartAttempt',
          command_id: cid('start'),
          at: now,
          ordinal: plan.ordinal,
          jitter: j,
          hold_id: `h${plan.ordinal}`,
          hold_cost_units: 10n,
          price: PRICE,
        });
        const outcome = nextOutcome(plan.ordinal);
        if (outcome)
          apply({ type: 'SettleAttempt', command_id: cid('settle'), at: now, ordinal: plan.ordinal, outcome });
        break;
      }
    }
  }
  throw new Error(`unit did not end within ${stepsMax} steps`);
}
