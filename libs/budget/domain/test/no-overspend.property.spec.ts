// Proves B19 on the pure decider (ADR 0043): across random interleavings of commands, duplicates and lost appends
// over a delegation tree, every charge is booked in full, committed passes a limit only by settled overruns, no hold
// is admitted past a limit, event ids never collide, and folding the events rebuilds the state.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  assertTreeInvariants,
  committedOf,
  decideSequence,
  evolve,
  fold,
  initialState,
  spendOf,
  usageKey,
  usageOf,
  type BudgetCommand,
  type GrantRef,
  type Hold,
  type RecordedBudgetEvent,
  type SettleOutcome,
  type TreeState,
} from '../src/index.js';
import { MONETARY, NOW, UNLIMITED, authorize, given, issue, run } from './tree.fixture.js';

/** A tight tree where every kind of limit binds: invocations, grant totals, shares and the parent's capacity. */
function tightTree() {
  const grant = (total: bigint) => ({ ...MONETARY, max_total_cost_units: total });
  return run(
    given([]),
    issue('root', [{ ...grant(500n), max_invocations: 3 }, UNLIMITED]),
    issue('child-a', [grant(250n)], { parent_id: 'root', budget_units: 300n }),
    issue('child-b', [grant(400n)], { parent_id: 'root', budget_units: 200n }),
    issue('child-a1', [grant(150n)], { parent_id: 'child-a', budget_units: 100n }),
  );
}

const CAPS = ['root', 'child-a', 'child-b', 'child-a1'] as const;
type Fate = 'apply' | 'drop' | 'duplicate';

type Op =
  | { op: 'authorize'; req: number; cap: number; cost: number | null; preflight: boolean }
  | { op: 'capture' | 'rollback' | 'cancel' | 'admit'; req: number; preflight: boolean }
  | { op: 'settle'; req: number; outcome: number; cost: number; prepaid: boolean }
  | { op: 'dispatch'; req: number; cost: number; prepaid: boolean }
  | { op: 'expire'; advanceMs: number }
  | { op: 'revoke'; cap: number };

const REQS = 24;
// Weighted so that trees fill up before a revocation or expiry empties them.
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      op: fc.constant('authorize' as const),
      req: fc.nat(REQS),
      cap: fc.nat(3),
      cost: fc.option(fc.nat(150)),
      preflight: fc.nat(6).map((n) => n === 0),
    }),
  },
  {
    weight: 8,
    arbitrary: fc.record({
      op: fc.constantFrom('capture' as const, 'rollback' as const, 'cancel' as const, 'admit' as const),
      req: fc.nat(REQS),
      preflight: fc.constant(false),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('rollback' as const), req: fc.nat(REQS), preflight: fc.constant(true) }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('settle' as const),
      req: fc.nat(REQS),
      outcome: fc.nat(3),
      cost: fc.nat(400),
      prepaid: fc.boolean(),
    }),
  },
  {
    // A whole dispatch at a cost up to four holds' worth: the way most overruns are reached.
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('dispatch' as const),
      req: fc.nat(REQS),
      cost: fc.nat(400),
      prepaid: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('expire' as const), advanceMs: fc.nat(20_000) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('revoke' as const), cap: fc.integer({ min: 1, max: 3 }) }) },
);
const stepArb = fc.tuple(opArb, fc.constantFrom<Fate>('apply', 'apply', 'apply', 'drop', 'duplicate'));

function holdFor(state: TreeState, req: number, preflight: boolean): string | undefined {
  return (preflight ? state.preflights : state.requests).get(`req-${req}`);
}

const OUTCOMES = (cost: number): SettleOutcome[] => [
  { kind: 'completed', cost_units: BigInt(cost) },
  { kind: 'failed_after_dispatch', failure: 'generic' },
  { kind: 'elicitation_required', message: 'm' },
  { kind: 'completed', cost_units: 0n },
];

function commandsFor(op: Op, state: TreeState, now: number): BudgetCommand[] {
  switch (op.op) {
    case 'authorize': {
      const extra = {
        now_ms: now,
        preflight: op.preflight,
        ...(op.cost === null ? {} : { requested_cost: BigInt(op.cost) }),
      };
      return [authorize(`req-${op.req}`, CAPS[op.cap]!, extra)];
    }
    case 'expire':
      return [{ type: 'ExpireHolds', now_ms: now, holds_max: 1000 }];
    case 'revoke':
      return [{ type: 'RevokeCapability', capability_id: CAPS[op.cap]!, now_ms: now }];
    default:
      return holdCommands(op, state, now);
  }
}

function holdCommands(
  op: Exclude<Op, { op: 'authorize' | 'expire' | 'revoke' }>,
  state: TreeState,
  now: number,
): BudgetCommand[] {
  const hold_id = holdFor(state, op.req, op.op === 'settle' || op.op === 'dispatch' ? false : op.preflight);
  if (!hold_id) return [];
  switch (op.op) {
    case 'dispatch':
      return dispatchCommands(op, state.holds.get(hold_id)!, now);
    case 'capture':
      return [{ type: 'CaptureInvocation', hold_id, now_ms: now }];
    case 'rollback':
      return [{ type: 'RollbackHold', hold_id, cause: 'pre_dispatch_cleanup', now_ms: now }];
    case 'cancel':
      return [{ type: 'CancelCaptured', hold_id, cause: 'payment_declined', now_ms: now }];
    case 'admit':
      return [
        {
          type: 'RecordPaymentStep',
          hold_id,
          payment: { step: 'authorized', authorization_id: 'a', mode: 'reversible_hold' },
          now_ms: now,
        },
        { type: 'AdmitInvocation', hold_id, now_ms: now },
      ];
    case 'settle': {
      const mode = op.prepaid ? 'prepaid_final' : 'reversible_hold';
      const pay: BudgetCommand = {
        type: 'RecordPaymentStep',
        hold_id,
        payment: { step: 'authorized', mode },
        now_ms: now,
      };
      const outcome = OUTCOMES(op.cost)[op.outcome]! as Exclude<SettleOutcome, { kind: 'not_dispatched' }>;
      return [pay, { type: 'SettleHold', hold_id, outcome, now_ms: now }];
    }
  }
}

interface Books {
  committed: bigint;
  overrun: bigint;
}

/** The rest of a hold's way from wherever it stands to a completed settlement at `cost`. */
function dispatchCommands(op: Extract<Op, { op: 'dispatch' }>, hold: Hold, now: number): BudgetCommand[] {
  const hold_id = hold.hold_id;
  const mode = op.prepaid ? 'prepaid_final' : 'reversible_hold';
  const out: BudgetCommand[] = [];
  if (hold.status === 'authorized') out.push({ type: 'CaptureInvocation', hold_id, now_ms: now });
  else if (hold.status !== 'captured') return [];
  out.push({ type: 'RecordPaymentStep', hold_id, payment: { step: 'authorized', mode }, now_ms: now });
  if (!hold.admitted) out.push({ type: 'AdmitInvocation', hold_id, now_ms: now });
  out.push({ type: 'SettleHold', hold_id, outcome: { kind: 'completed', cost_units: BigInt(op.cost) }, now_ms: now });
  return out;
}

/** Recomputes committed spend and overruns per grant from the holds alone: an independent check of the books. */
function booksFromHolds(state: TreeState): Map<string, Books> {
  const out = new Map<string, Books>();
  for (const hold of state.holds.values()) {
    const live = hold.status === 'authorized' || hold.status === 'captured' || hold.status === 'retained';
    const settled = hold.status === 'settled' ? hold.realized_units! : 0n;
    const amount = live ? hold.exposure_units : settled;
    const overrun = settled > hold.exposure_units ? settled - hold.exposure_units : 0n;
    for (const ref of hold.chain) {
      const books = out.get(usageKey(ref)) ?? { committed: 0n, overrun: 0n };
      out.set(usageKey(ref), { committed: books.committed + amount, overrun: books.overrun + overrun });
    }
  }
  return out;
}

/** B19 (ADR 0043): committed passes a limit only by the overruns settled on it; the books match the holds. */
function checkBooks(state: TreeState): void {
  assertTreeInvariants(state);
  const independent = booksFromHolds(state);
  for (const [key, usage] of state.usage) {
    expect(committedOf(usage)).toBe(independent.get(key)?.committed ?? 0n);
    expect(usage.overrun_cost_units).toBe(independent.get(key)?.overrun ?? 0n);
  }
  for (const capability of state.capabilities.values()) {
    const spend = spendOf(state, capability.id);
    if (capability.budget_units !== undefined)
      expect(spend.committed_units <= capability.budget_units + spend.overrun_units).toBe(true);
    for (const [index, grant] of capability.grants.entries()) {
      const usage = state.usage.get(usageKey({ capability_id: capability.id, grant_index: index }));
      if (!usage) continue;
      if (grant.max_total_cost_units !== undefined)
        expect(committedOf(usage) <= grant.max_total_cost_units + usage.overrun_cost_units).toBe(true);
      if (grant.max_invocations !== undefined) expect(usage.invocation_count <= grant.max_invocations).toBe(true);
    }
  }
}

/** A hold taken or raised fits under every limit of its chain: an overrun never lets new spend in. */
function checkFits(state: TreeState, chain: readonly GrantRef[]): void {
  for (const ref of chain) {
    const capability = state.capabilities.get(ref.capability_id)!;
    const limit = capability.grants[ref.grant_index]!.max_total_cost_units;
    if (limit !== undefined) expect(committedOf(usageOf(state, ref)) <= limit).toBe(true);
    if (capability.budget_units !== undefined)
      expect(spendOf(state, capability.id).committed_units <= capability.budget_units).toBe(true);
  }
}

/** B4 and B19: a settlement books what the provider billed (a prepaid-final one at least its hold), never less. */
function checkSettlement(before: TreeState, event: RecordedBudgetEvent): void {
  if (event.type !== 'SpendSettled') return;
  const hold = before.holds.get(event.data.hold_id)!;
  const actual = event.data.actual_units;
  const prepaid = hold.payment.mode === 'prepaid_final';
  const charge = prepaid && actual < hold.exposure_units ? hold.exposure_units : actual;
  expect(event.data.realized_units).toBe(charge);
  expect(event.data.overrun_units).toBe(0n);
  expect(event.data.hold_overrun_units).toBe(charge > hold.exposure_units ? charge - hold.exposure_units : 0n);
}

describe('no overspend, ever (B19)', () => {
  it('B19 random interleavings with duplicates and lost appends book every charge in full, pass a limit only by settled overruns, never admit past one, and a refold rebuilds the same state', () => {
    // Counted across runs, so the test shows the interleavings did reach overruns and shut grants.
    let overruns = 0;
    let shut = 0;
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 40, maxLength: 150, size: 'max' }), (steps) => {
        const start = tightTree();
        let state = start.state;
        const recorded: RecordedBudgetEvent[] = [...start.recorded];
        const seen = new Set(recorded.map((e) => e.event_id));
        let now = NOW;
        const append = (commands: BudgetCommand[]) => {
          const decision = decideSequence(commands, state);
          if (!decision.ok) {
            if (decision.rejection.code === 'budget_overrun') shut++;
            return;
          }
          for (const event of decision.events) {
            // A fresh decision never reuses an event id: JetStream would drop it as a duplicate.
            expect(seen.has(event.event_id)).toBe(false);
            seen.add(event.event_id);
            const r = { ...event, commit_index: state.last_commit_index + 1 } as RecordedBudgetEvent;
            checkSettlement(state, r);
            state = evolve(state, r);
            recorded.push(r);
            if (r.type === 'BudgetOverrun') overruns++;
            if (r.type === 'HoldAuthorized' || r.type === 'HoldIncreased')
              checkFits(state, state.holds.get(r.data.hold_id)!.chain);
          }
        };
        for (const [op, fate] of steps) {
          if (op.op === 'expire') now += op.advanceMs;
          const commands = commandsFor(op, state, now);
          if (commands.length === 0 || fate === 'drop') continue;
          append(commands);
          // A retry after a lost acknowledgement decides again on the state that already holds the first attempt.
          if (fate === 'duplicate') append(commandsFor(op, state, now));
          checkBooks(state);
        }
        expect(fold(recorded, initialState())).toEqual(state);
      }),
      { numRuns: 120 },
    );
    expect(overruns).toBeGreaterThan(0);
    expect(shut).toBeGreaterThan(0);
  });
});
