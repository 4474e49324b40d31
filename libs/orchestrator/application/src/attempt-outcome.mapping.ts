// Translations at the edges of one attempt: the gateway's outcome into the domain's
// AttemptOutcome, and an attempt's hold step into the budget authority's Settle outcome.
import { TOKENS_MAX } from '@tally/contracts';
import type { AttemptOutcome, AttemptState, NextStep } from '@tally/orchestrator-domain';
import type { DispatchOutcome, SettleOutcome } from './ports.js';

/** A reply is 'ok' in the gateway; the spec's table records it as domain 'unknown', settlement 'ok'. */
export function attemptOutcomeOf(outcome: DispatchOutcome): AttemptOutcome {
  if (outcome.kind === 'ok') {
    return {
      domain: 'unknown',
      settlement: 'ok',
      latency_ms: nonNegative(outcome.latency_ms),
      output: outcome.output,
      ...(outcome.output_parts === undefined ? {} : { output_parts: outcome.output_parts }),
      ...(outcome.stop_reason === undefined ? {} : { stop_reason: outcome.stop_reason }),
      ...(outcome.usage ? { usage: outcome.usage } : {}),
    };
  }
  const status = outcome.http_status;
  return {
    domain: outcome.domain,
    settlement: outcome.settlement,
    latency_ms: nonNegative(outcome.latency_ms),
    error: outcome.error,
    ...(outcome.usage ? { usage: outcome.usage } : {}),
    ...(outcome.partial_output === undefined ? {} : { partial_output: outcome.partial_output }),
    ...(outcome.retry_after_ms === undefined ? {} : { retry_after_ms: nonNegative(outcome.retry_after_ms) }),
    ...(status === undefined ? {} : { http_status: status }),
  };
}

/** The gateway promises to classify, not throw; if it throws anyway the call may have been sent, so it is unknown. */
export function outcomeOfGatewayFault(error: unknown, latencyMs: number): AttemptOutcome {
  return {
    domain: 'unknown',
    settlement: 'unknown',
    latency_ms: nonNegative(latencyMs),
    error: `gateway fault: ${error instanceof Error ? error.message : String(error)}`,
  };
}

function nonNegative(value: number): number {
  return Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
}

/**
 * How the budget authority settles an attempt's hold. Usage settles at the realized cost;
 * a definite refusal was never billed; anything else keeps the whole hold (B5), because a
 * dispatch without a rated outcome may have been billed.
 */
export function settleOutcomeOf(
  attempt: AttemptState,
  step: Extract<NextStep, { kind: 'settle_hold' }>,
): SettleOutcome {
  const settled = attempt.settled;
  if (step.outcome === 'completed') {
    if (step.cost_units === undefined)
      throw new Error(`attempt ${attempt.ordinal}: a completed hold needs its realized cost`);
    const usage = settled?.usage;
    return {
      kind: 'completed',
      cost_units: step.cost_units,
      currency: attempt.price.currency,
      // A provider may report more than a command carries; past TOKENS_MAX every tokens_per_minute is full anyway.
      ...(usage === undefined ? {} : { tokens_used: Math.min(usage.input_tokens + usage.output_tokens, TOKENS_MAX) }),
    };
  }
  if (step.outcome === 'not_dispatched')
    return { kind: 'not_dispatched', reason: settled?.error ?? 'refused by the provider before generation' };
  if (settled?.settlement === 'cancelled') return { kind: 'failed_after_dispatch', failure: 'cancellation' };
  if (settled?.domain === 'deadline') return { kind: 'failed_after_dispatch', failure: 'deadline' };
  if (settled?.orphaned || settled?.settlement === 'unknown')
    return { kind: 'failed_after_dispatch', failure: 'incomplete' };
  return { kind: 'failed_after_dispatch', failure: 'generic' };
}
