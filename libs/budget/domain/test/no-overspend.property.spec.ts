// Proves B19 on the pure decider (ADR 0043, ADR 0047): across random interleavings of commands, duplicates and lost
// appends over a delegation tree, sweeps of unsettled holds and late corrections, every charge is booked in full,
// committed passes a limit only by settled overruns, no hold is admitted past a limit, event ids never collide, and
// folding the events rebuilds the state.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  decideSequence,
  evolve,
  fold,
  initialState,
  type BudgetCommand,
  type Hold,
  type RecordedBudgetEvent,
  type SettleOutcome,
  type TreeState,
  unsettledHolds,
} from '../src/index.js';
import { GRACE_MS, checkBooks, checkCorrection, checkFits, checkSettlement } from './books.checks.js';
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
  | { op: 'dispatch' | 'abandon'; req: number; cost: number; prepaid: boolean }
  | { op: 'expire' | 'sweep'; advanceMs: number }
  | { op: 'correct'; req: number; outcome: number; cost: number }
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
      // An abandoned dispatch is admitted and never settled: its orchestrator vanished (ADR 0047).
      op: fc.constantFrom('dispatch' as const, 'dispatch' as const, 'abandon' as const),
      req: fc.nat(REQS),
      cost: fc.nat(400),
      prepaid: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('expire' as const), advanceMs: fc.nat(20_000) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('sweep' as const), advanceMs: fc.nat(45_000) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('correct' as const),
      req: fc.nat(REQS),
      outcome: fc.nat(4),
      cost: fc.nat(400),
    }),
  },
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
  { kind: 'not_dispatched', reason: 'r' },
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
    case 'sweep':
      return unsettledHolds(state, now, GRACE_MS, 1000).map((h) => ({
        type: 'SettleUnsettled',
        hold_id: h.hold_id,
        grace_ms: GRACE_MS,
        now_ms: now,
      }));
    case 'revoke':
      return [{ type: 'RevokeCapability', capability_id: CAPS[op.cap]!, now_ms: now }];
    case 'correct': {
      // The late record of one of the holds the sweep realized in full (or of any hold, when none was).
      const swept = [...state.holds.values()].filter((h) => h.settlement_cause !== undefined && !h.corrected);
      const hold_id = swept[op.req % Math.max(1, swept.length)]?.hold_id ?? holdFor(state, op.req, false);
      return hold_id ? [{ type: 'CorrectSpend', hold_id, outcome: OUTCOMES(op.cost)[op.outcome]!, now_ms: now }] : [];
    }
    default:
      return holdCommands(op, state, now);
  }
}

function holdCommands(
  op: Exclude<Op, { op: 'authorize' | 'expire' | 'sweep' | 'revoke' | 'correct' }>,
  state: TreeState,
  now: number,
): BudgetCommand[] {
  const hold_id = holdFor(state, op.req, 'preflight' in op ? op.preflight : false);
  if (!hold_id) return [];
  switch (op.op) {
    case 'dispatch':
    case 'abandon':
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
      const outcome = OUTCOMES(op.cost)[op.outcome % 4]! as Exclude<SettleOutcome, { kind: 'not_dispatched' }>;
      return [pay, { type: 'SettleHold', hold_id, outcome, now_ms: now }];
    }
  }
}

/** The rest of a hold's way from wherever it stands to a completed settlement at `cost` (abandoned: to its admission). */
function dispatchCommands(op: Extract<Op, { op: 'dispatch' | 'abandon' }>, hold: Hold, now: number): BudgetCommand[] {
  const hold_id = hold.hold_id;
  const mode = op.prepaid ? 'prepaid_final' : 'reversible_hold';
  const out: BudgetCommand[] = [];
  if (hold.status === 'authorized') out.push({ type: 'CaptureInvocation', hold_id, now_ms: now });
  else if (hold.status !== 'captured') return [];
  out.push({ type: 'RecordPaymentStep', hold_id, payment: { step: 'authorized', mode }, now_ms: now });
  if (!hold.admitted) out.push({ type: 'AdmitInvocation', hold_id, now_ms: now });
  if (op.op === 'abandon') return out;
  out.push({ type: 'SettleHold', hold_id, outcome: { kind: 'completed', cost_units: BigInt(op.cost) }, now_ms: now });
  return out;
}

describe('no overspend, ever (B19)', () => {
  it('B19 B20 B21 random interleavings with duplicates, lost appends, sweeps of unsettled holds and late corrections book every charge in full, pass a limit only by settled overruns, never admit past one, and a refold rebuilds the same state', () => {
    // Counted across runs, so the test shows the interleavings did reach overruns and shut grants.
    let overruns = 0;
    let shut = 0;
    let corrected = 0;
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
            checkCorrection(state, r);
            state = evolve(state, r);
            recorded.push(r);
            if (r.type === 'BudgetOverrun') overruns++;
            if (r.type === 'SpendCorrected') corrected++;
            if (r.type === 'HoldAuthorized' || r.type === 'HoldIncreased')
              checkFits(state, state.holds.get(r.data.hold_id)!.chain);
          }
        };
        for (const [op, fate] of steps) {
          if (op.op === 'expire' || op.op === 'sweep') now += op.advanceMs;
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
    expect(corrected).toBeGreaterThan(0);
  });
});
