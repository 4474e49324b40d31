// Admission as the spend policy asks of the worker (http-api.md, Spend policy): a refusal
// for a rate limit is transient, so the worker waits the answer's retry_after_ms and asks
// again, within the unit's dispatch ceiling and max_retry_after_ms; and a hold fitted below
// the worst case (hold_cap_units, or the free room) lowers max_tokens to what it covers
// instead of refusing the call. Fitting lowers max_tokens, never the prompt's bound (ADR 0042):
// the prompt is sent whole, so its bound is held whole.
import { worstCaseCostUnits, type ModelPrice, type WorkLimits } from '@tally/orchestrator-domain';
import type { AdmitDecision, AdmitRequest, BudgetPort, Sleep } from './ports.js';

/** The fewest output tokens a fitted call may have: below this a call is refused, not shrunk. */
export const FIT_MIN_OUTPUT_TOKENS = 64;
export const RATE_LIMITED = 'rate_limited';

export interface FittedAdmission {
  readonly decision: AdmitDecision;
  /** The max_tokens the call may use: the unit's, or fewer when the hold was fitted. */
  readonly max_tokens: number;
  /** What the hold covers. */
  readonly hold_cost_units: bigint;
}

/**
 * The worst-case request of an attempt, with the smallest hold it can use and its tokens.
 * `promptTokens` is the prompt's bound (`promptTokenBound`), in every figure whole.
 */
export function fittedRequest(
  base: Omit<AdmitRequest, 'requested_cost_units' | 'requested_tokens' | 'min_cost_units'>,
  price: ModelPrice,
  promptTokens: number,
  maxTokens: number,
): AdmitRequest {
  const floor = Math.min(maxTokens, FIT_MIN_OUTPUT_TOKENS);
  return {
    ...base,
    requested_cost_units: worstCaseCostUnits(price, promptTokens, maxTokens),
    requested_tokens: promptTokens + maxTokens,
    min_cost_units: worstCaseCostUnits(price, promptTokens, floor),
  };
}

/** The most output tokens a hold of `holdUnits` covers after the prompt's bound, never more than asked. */
export function maxTokensFor(price: ModelPrice, promptTokens: number, holdUnits: bigint, maxTokens: number): number {
  if (price.output_per_mtok_units === 0) return maxTokens;
  const input = BigInt(promptTokens) * BigInt(price.input_per_mtok_units);
  const room = holdUnits * 1_000_000n - input;
  if (room <= 0n) return 0;
  const tokens = room / BigInt(price.output_per_mtok_units);
  return Number(tokens < BigInt(maxTokens) ? tokens : BigInt(maxTokens));
}

/**
 * Admits, waiting out rate limits. Each new ask is a new command and request id (the first
 * one's answer is recorded for good), derived from the attempt's ids and the ask's number,
 * so a redelivered unit replays the same asks and gets the same answers.
 */
export async function admitFitted(
  budget: BudgetPort,
  sleep: Sleep,
  request: AdmitRequest,
  limits: Pick<WorkLimits, 'dispatch_ceiling' | 'max_retry_after_ms'>,
  signal?: AbortSignal,
): Promise<AdmitDecision> {
  let decision = await budget.admit(request);
  for (let ask = 1; ask < limits.dispatch_ceiling; ask++) {
    if (decision.verdict !== 'deny' || decision.reason !== RATE_LIMITED) return decision;
    const wait = decision.retry_after_ms ?? 1_000;
    if (wait > limits.max_retry_after_ms || signal?.aborted) return decision;
    await sleep(wait, signal);
    if (signal?.aborted) return decision;
    decision = await budget.admit({
      ...request,
      command_id: `${request.command_id}:ask:${ask}`,
      request_id: `${request.request_id}:ask:${ask}`,
    });
  }
  return decision;
}
