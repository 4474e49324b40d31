// Given/when/then helpers for the delegation-tree decider, and a standard tree:
// root (monetary + unlimited grant) -> child A (share 400) -> grandchild A1 (share 200),
// root -> child B (share 300).
import {
  decide,
  decideSequence,
  evolve,
  initialState,
  type BudgetCommand,
  type BudgetEvent,
  type Decision,
  type Grant,
  type RecordedBudgetEvent,
  type TreeState,
} from '../src/index.js';

export const NOW = 1_700_000_000_000;
export const HOUR = 3_600_000;

export interface Given {
  readonly state: TreeState;
  readonly recorded: RecordedBudgetEvent[];
}

/** Folds events with commit indexes 1..n, as the stream would number them on one subject. */
export function given(events: readonly BudgetEvent[], start: Given = { state: initialState(), recorded: [] }): Given {
  let state = start.state;
  const recorded = [...start.recorded];
  for (const event of events) {
    const r = { ...event, commit_index: state.last_commit_index + 1 } as RecordedBudgetEvent;
    state = evolve(state, r);
    recorded.push(r);
  }
  return { state, recorded };
}

/** Decides commands in order and records their events: a test's "when" that keeps going. */
export function run(g: Given, ...commands: BudgetCommand[]): Given {
  const decision = decideSequence(commands, g.state);
  if (!decision.ok) throw new Error(`rejected: ${decision.rejection.code} ${decision.rejection.message}`);
  return given(decision.events, g);
}

export function when(g: Given, command: BudgetCommand): Decision {
  return decide(command, g.state);
}

export const MONETARY: Grant = {
  server_id: 'cost-srv',
  tool_name: 'compute',
  max_cost_per_invocation: 100n,
  max_total_cost_units: 1000n,
  currency: 'USD',
};
export const UNLIMITED: Grant = { server_id: 'cost-srv', tool_name: 'compute' };

export function issue(
  id: string,
  grants: readonly Grant[],
  extra: Partial<Extract<BudgetCommand, { type: 'IssueCapability' }>> = {},
): BudgetCommand {
  return {
    type: 'IssueCapability',
    capability_id: id,
    root_id: 'root',
    subject_public_key: `pk-${id}`,
    expires_at_ms: NOW + HOUR,
    grants,
    now_ms: NOW,
    delegation_depth_max: 8,
    grants_max: 16,
    ...extra,
  };
}

export function authorize(
  requestId: string,
  capabilityId: string,
  extra: Partial<Extract<BudgetCommand, { type: 'AuthorizeHold' }>> = {},
): BudgetCommand {
  return {
    type: 'AuthorizeHold',
    request_id: requestId,
    capability_id: capabilityId,
    subject: `pk-${capabilityId}`,
    server_id: 'cost-srv',
    tool_name: 'compute',
    parameters_hash: 'h',
    preflight: false,
    context: { kind: 'standalone' },
    hold_ttl_ms: 30_000,
    now_ms: NOW,
    ...extra,
  };
}

export function standardTree(): Given {
  const childGrant: Grant = {
    server_id: 'cost-srv',
    tool_name: 'compute',
    max_cost_per_invocation: 100n,
    max_total_cost_units: 600n,
    currency: 'USD',
  };
  return run(
    given([]),
    issue('root', [MONETARY, UNLIMITED]),
    issue('child-a', [childGrant], { parent_id: 'root', budget_units: 400n }),
    issue('child-b', [childGrant], { parent_id: 'root', budget_units: 300n }),
    issue('child-a1', [{ ...childGrant, max_total_cost_units: 300n }], { parent_id: 'child-a', budget_units: 200n }),
  );
}

export function types(decision: Decision): string[] {
  if (!decision.ok) throw new Error(`rejected: ${decision.rejection.code}`);
  return decision.events.map((e) => e.type);
}
