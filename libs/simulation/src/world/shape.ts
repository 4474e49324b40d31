// The shape of one run, drawn from the seed: how many replicas of each service, the payment
// mode, whether admissions take leases or need execution nonces, how small the tree cache
// is, and the grants of each delegation tree (limits, periods, rates). Different seeds
// cover different configurations; one seed always builds the same world.
import type { Grant } from '@tally/budget-domain';
import type { PaymentMode } from '@tally/budget-domain';
import type { Prng } from '../core/prng.js';

export interface TreeShape {
  /** The LLM grant the work units spend on (server `sim`, any model). */
  readonly llm: Grant;
  /** The tool grant direct callers spend on (server `tools`, tool `lookup`). */
  readonly tool: Grant;
  /** A delegated child with a share of the budget, whose units count against the root too. */
  readonly child: { readonly share_units: bigint; readonly llm: Grant } | undefined;
}

export interface WorldShape {
  readonly authorities: number;
  readonly orchestrators: number;
  readonly paymentMode: PaymentMode;
  /** The admission hook reserves a lease per hold (the stepwise Admit), instead of the passive allow-all. */
  readonly leases: boolean;
  readonly requireExecutionNonce: boolean;
  readonly captureWithAuthorize: boolean;
  readonly treeCacheMax: number;
  readonly holdTtlMs: number;
  readonly trees: readonly TreeShape[];
  /** Mean virtual time between two work submissions, and between two direct tool calls. */
  readonly submitEveryMs: number;
  readonly directEveryMs: number;
  readonly maxTokens: number;
}

export function shapeOf(rng: Prng): WorldShape {
  const trees = Array.from({ length: rng.range(1, 3) }, () => treeShape(rng));
  return {
    authorities: rng.range(2, 3),
    orchestrators: rng.range(2, 3),
    paymentMode: rng.chance(0.3) ? 'prepaid_final' : 'reversible_hold',
    leases: rng.chance(0.35),
    requireExecutionNonce: rng.chance(0.25),
    captureWithAuthorize: rng.chance(0.85),
    treeCacheMax: rng.chance(0.1) ? 1 : 10_000,
    holdTtlMs: rng.pick([5_000, 15_000, 60_000]),
    trees,
    submitEveryMs: rng.pick([100, 300, 800]),
    directEveryMs: rng.pick([150, 500, 2_000]),
    maxTokens: rng.pick([16, 64, 200]),
  };
}

function treeShape(rng: Prng): TreeShape {
  const llm = llmGrant(rng, BigInt(rng.range(1_500, 12_000)));
  const share = BigInt(rng.range(400, 2_000));
  // A child grant narrows its parent's: no larger limit, the same currency and reset.
  const child = rng.chance(0.5)
    ? {
        share_units: share,
        llm: {
          server_id: 'sim',
          tool_name: '*',
          max_cost_per_invocation: llm.max_cost_per_invocation!,
          max_total_cost_units: share < llm.max_total_cost_units! ? share : llm.max_total_cost_units!,
          currency: 'USD',
          ...(llm.max_invocations === undefined ? {} : { max_invocations: llm.max_invocations }),
          ...(rng.chance(0.3) ? { rate_limits: { max_concurrent: rng.range(1, 2) } } : {}),
        },
      }
    : undefined;
  return {
    llm,
    tool: {
      server_id: 'tools',
      tool_name: 'lookup',
      max_cost_per_invocation: 60n,
      max_total_cost_units: BigInt(rng.range(200, 1_500)),
      currency: 'USD',
      ...(rng.chance(0.4) ? { max_invocations: rng.range(4, 30) } : {}),
    },
    child,
  };
}

/** A grant on every model of provider `sim`, with a random selection of the spend-policy limits. */
function llmGrant(rng: Prng, total: bigint): Grant {
  return {
    server_id: 'sim',
    tool_name: '*',
    max_cost_per_invocation: 5_000n,
    max_total_cost_units: total,
    currency: 'USD',
    ...(rng.chance(0.3) ? { max_invocations: rng.range(5, 60) } : {}),
    ...(rng.chance(0.4) ? { reset: { period_seconds: rng.pick([20, 60, 300]) } } : {}),
    ...(rng.chance(0.4)
      ? {
          rate_limits: {
            ...(rng.chance(0.7) ? { requests_per_minute: rng.range(3, 30) } : {}),
            ...(rng.chance(0.6) ? { max_concurrent: rng.range(1, 4) } : {}),
          },
        }
      : {}),
    ...(rng.chance(0.2) ? { hold_cap_units: BigInt(rng.range(150, 600)) } : {}),
    ...(rng.chance(0.3) ? { alert_at_percent: [50, 90] } : {}),
  };
}
