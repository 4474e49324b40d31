// Proves that the delegation tree never books a sum past 2^63-1 (ADR 0044): such a command is a named rejection, and an event carrying a wider amount is an assertion.
import { describe, expect, it } from '@jest/globals';
import {
  AMOUNT_MAX_UNITS,
  AssertionError,
  assertAmount,
  decideSequence,
  evolve,
  usageOf,
  type BudgetCommand,
  type Grant,
} from '../src/index.js';
import { NOW, authorize, given, issue, run, when } from './tree.fixture.js';

const MAX = AMOUNT_MAX_UNITS;
/** A monetary grant with no total: nothing but the range of an amount bounds its usage. */
const OPEN: Grant = { server_id: 'cost-srv', tool_name: 'compute', max_cost_per_invocation: MAX, currency: 'USD' };
const hold = (req: string, cap = 'root') => `budget-hold:${req}:${cap}:0`;
const admitted = (req: string, cost: bigint, cap = 'root'): BudgetCommand[] => [
  authorize(req, cap, { requested_cost: cost }),
  { type: 'CaptureInvocation', hold_id: hold(req, cap), now_ms: NOW },
  { type: 'AdmitInvocation', hold_id: hold(req, cap), now_ms: NOW },
];
const settle = (req: string, cost: bigint): BudgetCommand => ({
  type: 'SettleHold',
  hold_id: hold(req),
  outcome: { kind: 'completed', cost_units: cost },
  now_ms: NOW,
});

describe('ADR 0044 sums stay amounts', () => {
  it('B19 a hold that would take a grant without a total past 2^63-1 is refused as amount_out_of_range; up to it, it is booked', () => {
    const g = run(given([]), issue('root', [OPEN]), authorize('r1', 'root', { requested_cost: MAX - 1n }));
    const refused = decideSequence([authorize('r2', 'root', { requested_cost: 2n })], g.state);
    expect(refused).toMatchObject({ ok: false, rejection: { code: 'amount_out_of_range' } });
    expect(!refused.ok && refused.rejection.message).toMatch(
      /would reach 9223372036854775808, past the largest amount/,
    );
    const full = run(g, authorize('r3', 'root', { requested_cost: 1n }));
    expect(usageOf(full.state, { capability_id: 'root', grant_index: 0 }).exposed_cost_units).toBe(MAX);
  });

  it('B19 a delegated hold is refused when an ancestor grant would pass 2^63-1, though its own grant has room', () => {
    let g = run(
      given([]),
      issue('root', [OPEN]),
      issue('child', [OPEN], { parent_id: 'root' }),
      authorize('r1', 'root', { requested_cost: MAX }),
    );
    expect(decideSequence([authorize('c1', 'child', { requested_cost: 1n })], g.state)).toMatchObject({
      ok: false,
      rejection: { code: 'amount_out_of_range' },
    });
    g = run(g, { type: 'RollbackHold', hold_id: hold('r1'), cause: 'pre_dispatch_cleanup', now_ms: NOW });
    expect(decideSequence([authorize('c1', 'child', { requested_cost: 1n })], g.state).ok).toBe(true);
  });

  it('B19 a settlement whose charge would take the committed cost past 2^63-1 is refused; one that reaches it is booked', () => {
    const g = run(given([]), issue('root', [OPEN]), ...admitted('r1', 10n), ...admitted('r2', MAX - 20n));
    const refused = decideSequence([settle('r1', 21n)], g.state);
    expect(refused).toMatchObject({ ok: false, rejection: { code: 'amount_out_of_range' } });
    // The largest charge that fits is booked in full.
    const settled = run(g, settle('r1', 20n));
    expect(usageOf(settled.state, { capability_id: 'root', grant_index: 0 })).toMatchObject({
      exposed_cost_units: MAX - 20n,
      realized_cost_units: 20n,
    });
  });

  it("B19 an increase that would take its grant's committed cost past 2^63-1 is refused as amount_out_of_range", () => {
    const g = run(
      given([]),
      issue('root', [OPEN]),
      authorize('r1', 'root', { requested_cost: MAX - 1n }),
      authorize('r2', 'root', { requested_cost: 1n }),
    );
    const increase = (amount: bigint): BudgetCommand => ({
      type: 'IncreaseHold',
      hold_id: hold('r2'),
      amount_units: amount,
      increases_max: 4,
      now_ms: NOW,
    });
    expect(decideSequence([increase(1n)], g.state)).toMatchObject({
      ok: false,
      rejection: { code: 'amount_out_of_range', message: expect.stringMatching(/committed cost of root grant 0/) },
    });
    const lower = run(g, { type: 'RollbackHold', hold_id: hold('r1'), cause: 'pre_dispatch_cleanup', now_ms: NOW });
    expect(decideSequence([increase(1n)], lower.state).ok).toBe(true);
  });

  it("B19 a delegation whose siblings' shares would sum past 2^63-1 is refused with the reason", () => {
    const g = run(given([]), issue('root', [OPEN]), issue('a', [OPEN], { parent_id: 'root', budget_units: MAX }));
    const refused = when(g, issue('b', [OPEN], { parent_id: 'root', budget_units: 1n }));
    expect(refused).toMatchObject({
      ok: false,
      rejection: {
        code: 'amount_out_of_range',
        message: expect.stringMatching(/^budget_share_units: the siblings' shares would sum to 9223372036854775808/),
      },
    });
    expect(when(g, issue('b', [OPEN], { parent_id: 'root', budget_units: 0n })).ok).toBe(true);
    expect(when(given([]), issue('root', [OPEN], { budget_units: MAX + 1n }))).toMatchObject({
      ok: false,
      rejection: { code: 'amount_out_of_range' },
    });
    expect(when(given([]), issue('root', [{ ...OPEN, max_total_cost_units: MAX + 1n }]))).toMatchObject({
      ok: false,
      rejection: { code: 'grants_invalid' },
    });
  });

  it('B19 an event that carries an amount outside [0, 2^63-1] is an assertion in evolve, naming the field', () => {
    const g = run(given([]), issue('root', [OPEN]));
    const decision = when(g, authorize('r1', 'root', { requested_cost: 5n }));
    if (!decision.ok) throw new Error('the authorization was refused');
    const wide = { ...decision.events[0]!, data: { ...decision.events[0]!.data, exposure_units: MAX + 1n } };
    expect(() => evolve(g.state, { ...wide, commit_index: 2 } as never)).toThrow(AssertionError);
    expect(() => evolve(g.state, { ...wide, commit_index: 2 } as never)).toThrow(/exposure_units/);
    const issued = when(given([]), issue('root', [OPEN]));
    if (!issued.ok) throw new Error('the issue was refused');
    const grants = [{ ...OPEN, max_invocations: -1 }];
    const bad = { ...issued.events[0]!, data: { ...issued.events[0]!.data, grants }, commit_index: 1 };
    expect(() => evolve(given([]).state, bad as never)).toThrow(/grants\.0\.max_invocations/);
    expect(() => assertAmount(-1n, 'x')).toThrow(AssertionError);
    expect(() => assertAmount(MAX, 'x')).not.toThrow();
  });
});
