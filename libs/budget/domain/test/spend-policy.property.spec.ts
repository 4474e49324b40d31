// Proves the spend policy on the pure decider: under random interleavings, duplicates and dropped appends across DST
// days, nothing exceeds its limit per period but by overruns booked in full (ADR 0043), per sliding window or at
// once; increases stay within their bound and cap; every threshold fires exactly once per period; and a refold
// rebuilds the same usage, windows and alerts.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  assertTreeInvariants,
  committedOf,
  decideSequence,
  evolve,
  fold,
  initialState,
  periodKey,
  viewAt,
  countedTokens,
  type BudgetCommand,
  type Grant,
  type RecordedBudgetEvent,
  type TreeState,
} from '../src/index.js';
import { authorize, given, issue, run } from './tree.fixture.js';

// Two days before New York's autumn DST change: periods of 24 and 25 hours.
const START = Date.UTC(2024, 10, 2, 3);
const RPM = 4;
const TPM = 2_000;
const CONCURRENT = 3;
const INCREASES_MAX = 2;
const POLICY: Grant = {
  server_id: 'cost-srv',
  tool_name: 'compute',
  max_cost_per_invocation: 300n,
  max_total_cost_units: 1_000n,
  max_invocations: 12,
  currency: 'USD',
  reset: { every: 'day', timezone: 'America/New_York' },
  rate_limits: { requests_per_minute: RPM, tokens_per_minute: TPM, max_concurrent: CONCURRENT },
  alert_at_percent: [50, 80],
  hold_cap_units: 250n,
};

function policyTree() {
  return run(
    given([]),
    issue('root', [POLICY], { now_ms: START, expires_at_ms: START + 30 * 86_400_000 }),
    issue('child', [{ ...POLICY, max_total_cost_units: 600n, reset: undefined } as Grant], {
      parent_id: 'root',
      now_ms: START,
      expires_at_ms: START + 30 * 86_400_000,
    }),
  );
}

type Op =
  | { op: 'authorize'; req: number; cap: number; cost: number; tokens: number; fit: boolean }
  | { op: 'admit' | 'rollback'; req: number }
  | { op: 'settle'; req: number; cost: number; tokens: number }
  | { op: 'increase'; req: number; amount: number; tokens: number }
  | { op: 'advance'; ms: number };

const REQS = 30;
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      op: fc.constant('authorize' as const),
      req: fc.nat(REQS),
      cap: fc.nat(1),
      cost: fc.nat(300),
      tokens: fc.nat(900),
      fit: fc.boolean(),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({ op: fc.constantFrom('admit' as const, 'rollback' as const), req: fc.nat(REQS) }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('settle' as const),
      req: fc.nat(REQS),
      cost: fc.nat(300),
      tokens: fc.nat(900),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('increase' as const),
      req: fc.nat(REQS),
      amount: fc.integer({ min: 1, max: 120 }),
      tokens: fc.nat(300),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('advance' as const),
      ms: fc.oneof(fc.integer({ min: 1, max: 30_000 }), fc.integer({ min: 1, max: 8 * 3_600_000 })),
    }),
  },
);

function commandsFor(op: Op, state: TreeState, now: number): BudgetCommand[] {
  if (op.op === 'advance') return [];
  if (op.op === 'authorize')
    return [
      authorize(`req-${op.req}`, op.cap === 0 ? 'root' : 'child', {
        now_ms: now,
        requested_cost: BigInt(op.cost),
        requested_tokens: op.tokens,
        ...(op.fit ? { min_cost: 1n } : {}),
        concurrency_retry_after_ms: 500,
      }),
    ];
  const hold_id = state.requests.get(`req-${op.req}`);
  if (!hold_id) return [];
  switch (op.op) {
    case 'admit':
      return [
        { type: 'CaptureInvocation', hold_id, now_ms: now },
        { type: 'AdmitInvocation', hold_id, now_ms: now },
      ];
    case 'rollback':
      return [{ type: 'RollbackHold', hold_id, cause: 'pre_dispatch_cleanup', now_ms: now }];
    case 'settle':
      return [
        {
          type: 'SettleHold',
          hold_id,
          outcome: { kind: 'completed', cost_units: BigInt(op.cost) },
          tokens_used: op.tokens,
          now_ms: now,
        },
      ];
    case 'increase':
      return [
        {
          type: 'IncreaseHold',
          hold_id,
          amount_units: BigInt(op.amount),
          tokens: op.tokens,
          increases_max: INCREASES_MAX,
          now_ms: now,
        },
      ];
  }
}

/** Independent of the folded windows: admissions and open holds recounted from the events and holds. */
function checkPolicy(state: TreeState, recorded: readonly RecordedBudgetEvent[], now: number): void {
  assertTreeInvariants(state);
  for (const ref of [
    { capability_id: 'root', grant_index: 0 },
    { capability_id: 'child', grant_index: 0 },
  ]) {
    const key = `${ref.capability_id}#0`;
    // Window times as the tree keeps them: never earlier than the admission before.
    let last = 0;
    const times: number[] = [];
    for (const e of recorded)
      if (e.type === 'HoldAuthorized' && !e.data.preflight && e.data.chain.some((c) => `${c.capability_id}#0` === key))
        times.push((last = Math.max(last, e.data.at_ms)));
    for (const [i, t] of times.entries())
      expect(times.filter((u, j) => j <= i && u > t - 60_000).length).toBeLessThanOrEqual(RPM);
    const holds = [...state.holds.values()].filter((h) => h.chain.some((c) => `${c.capability_id}#0` === key));
    expect(holds.filter((h) => h.status === 'authorized' || h.status === 'captured').length).toBeLessThanOrEqual(
      CONCURRENT,
    );
    const window = state.windows.get(key);
    if (window)
      expect(viewAt(window, Math.max(now, window.last_at_ms), countedTokens(state)).tokens).toBeLessThanOrEqual(TPM);
    // Per period: committed and invocations recounted from the holds' own periods.
    const perPeriod = new Map<number, { committed: bigint; overrun: bigint; invocations: number }>();
    for (const h of holds) {
      const index = h.chain.findIndex((c) => `${c.capability_id}#0` === key);
      const period = h.periods?.[index];
      expect(period).toBeTruthy();
      const live = h.status === 'authorized' || h.status === 'captured' || h.status === 'retained';
      const settled = h.status === 'settled' ? h.realized_units! : 0n;
      const amount = live ? h.exposure_units : settled;
      const entry = perPeriod.get(period!.start_ms) ?? { committed: 0n, overrun: 0n, invocations: 0 };
      perPeriod.set(period!.start_ms, {
        committed: entry.committed + amount,
        // ADR 0043: what a provider billed beyond the hold is booked, and is all that may pass the limit.
        overrun: entry.overrun + (settled > h.exposure_units ? settled - h.exposure_units : 0n),
        invocations: entry.invocations + (live || h.status === 'settled' ? 1 : 0),
      });
      expect(h.exposure_units <= POLICY.hold_cap_units! && (h.increases ?? 0) <= INCREASES_MAX).toBe(true);
    }
    const limit = ref.capability_id === 'root' ? 1_000n : 600n;
    for (const [start, p] of perPeriod) {
      expect(p.committed <= limit + p.overrun && p.invocations <= 12).toBe(true);
      const usage = state.period_usage.get(periodKey(ref, start))!;
      expect(committedOf(usage)).toBe(p.committed);
      expect(usage.overrun_cost_units).toBe(p.overrun);
    }
  }
  // Each threshold of each period fired at most once.
  const alerts = recorded.filter((e) => e.type === 'BudgetThresholdCrossed' || e.type === 'BudgetExhausted');
  expect(new Set(alerts.map((e) => e.event_id)).size).toBe(alerts.length);
}

/** Windows compared by what they hold, not by the shared log they happen to sit in. */
function normalized(state: TreeState) {
  const counted = countedTokens(state);
  const windows = [...state.windows.entries()].map(([key, w]) => [key, viewAt(w, w.last_at_ms, counted), w.open]);
  return { ...state, windows };
}

describe('spend policy on the decider (issue 11)', () => {
  it('issue 11 random interleavings with duplicates never exceed a limit per period, per window or at once, and replay the same', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(opArb, fc.constantFrom('apply', 'apply', 'drop', 'duplicate')), {
          minLength: 40,
          maxLength: 160,
        }),
        (steps) => {
          const start = policyTree();
          let state = start.state;
          const recorded: RecordedBudgetEvent[] = [...start.recorded];
          let now = START;
          const append = (commands: BudgetCommand[]) => {
            const decision = decideSequence(commands, state);
            if (!decision.ok) {
              if (decision.rejection.code === 'rate_limited')
                expect(decision.rejection.retry_after_ms).toBeGreaterThan(0);
              return;
            }
            for (const event of decision.events) {
              const r = { ...event, commit_index: state.last_commit_index + 1 } as RecordedBudgetEvent;
              state = evolve(state, r);
              recorded.push(r);
            }
          };
          for (const [op, fate] of steps) {
            if (op.op === 'advance') now += op.ms;
            const commands = commandsFor(op, state, now);
            if (commands.length === 0 || fate === 'drop') continue;
            append(commands);
            if (fate === 'duplicate') append(commandsFor(op, state, now));
            checkPolicy(state, recorded, now);
          }
          expect(normalized(fold(recorded, initialState()))).toEqual(normalized(state));
        },
      ),
      { numRuns: 100 },
    );
  });

  it('issue 11 a refusal for requests_per_minute passes when retried after retry_after_ms', () => {
    let g = policyTree();
    for (let i = 0; i < RPM; i++) {
      g = run(g, authorize(`r${i}`, 'root', { now_ms: START + i * 1_000, requested_cost: 1n, requested_tokens: 1 }));
      // Undone holds are no longer open, but their admissions stay in the window.
      const hold_id = g.state.requests.get(`r${i}`)!;
      g = run(g, { type: 'RollbackHold', hold_id, cause: 'pre_dispatch_cleanup', now_ms: START + i * 1_000 });
    }
    const refused = decideSequence(
      [authorize('late', 'root', { now_ms: START + 10_000, requested_cost: 1n, requested_tokens: 1 })],
      g.state,
    );
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.rejection).toMatchObject({ code: 'rate_limited', retry_after_ms: 50_000 });
    const retry = START + 10_000 + refused.rejection.retry_after_ms!;
    expect(
      decideSequence(
        [authorize('late', 'root', { now_ms: retry - 1, requested_cost: 1n, requested_tokens: 1 })],
        g.state,
      ).ok,
    ).toBe(false);
    expect(
      decideSequence([authorize('late', 'root', { now_ms: retry, requested_cost: 1n, requested_tokens: 1 })], g.state)
        .ok,
    ).toBe(true);
  });

  it('issue 11 a hold that does not fit whole is fitted to the hold cap and the free room when the caller accepts less', () => {
    const g = policyTree();
    const fitted = run(
      g,
      authorize('big', 'root', { now_ms: START, requested_cost: 300n, requested_tokens: 1, min_cost: 10n }),
    );
    expect(fitted.state.holds.get(fitted.state.requests.get('big')!)!.exposure_units).toBe(250n);
    const refused = decideSequence(
      [authorize('big2', 'root', { now_ms: START, requested_cost: 300n, requested_tokens: 1 })],
      g.state,
    );
    expect(refused.ok ? undefined : refused.rejection.code).toBe('hold_cap_exceeded');
  });
});
