// Holds: authorize (verify, match a grant, reserve within every limit of the chain),
// capture at most once, roll back before capture, cancel before dispatch, and expire.
import type { AuthorizeHold, CancelCaptured, CaptureInvocation, ExpireHolds, RollbackHold } from './commands.js';
import { accept, reject, type Decision, type Rejection } from './decision.js';
import type { BudgetEvent } from './events.js';
import { EventIds, holdId, preflightHoldId } from './ids.js';
import { checkRateLimits, fitExposure, periodsFor } from './decide-policy.js';
import { committedOf, type Capability, type Grant, type GrantRef, type Hold } from './model.js';
import type { Period } from './periods.js';
import { ancestry, grantChain, limitedUsageOf, spendOf, type TreeState } from './state.js';

export function verifyCapability(
  state: TreeState,
  capabilityId: string,
  subject: string | undefined,
  nowMs: number,
): Capability | Rejection {
  const chain = ancestry(state, capabilityId);
  const capability = chain[0];
  if (!capability) return { code: 'capability_unknown', message: `capability ${capabilityId} is unknown` };
  if (chain.some((c) => c.revoked_at_ms !== undefined))
    return { code: 'capability_revoked', message: 'capability revoked' };
  if (chain.some((c) => c.expires_at_ms <= nowMs)) return { code: 'capability_expired', message: 'capability expired' };
  if (subject !== undefined && subject !== capability.subject_public_key)
    return { code: 'subject_mismatch', message: 'capability subject mismatch' };
  return capability;
}

const isRejection = (value: object): value is Rejection => 'code' in value;

export function decideAuthorize(command: AuthorizeHold, state: TreeState): Decision {
  const answered = checkUnanswered(command.command_id, state);
  if (answered) return answered;
  const capability = verifyCapability(state, command.capability_id, command.subject, command.now_ms);
  if (isRejection(capability)) return { ok: false, rejection: capability };
  const replay = checkReplay(command, state);
  if (replay) return replay;
  const candidates = capability.grants
    .map((grant, index) => ({ grant, index }))
    .filter(({ grant }) => matches(grant, command.server_id, command.tool_name));
  if (candidates.length === 0)
    return reject('no_matching_grant', `no grant covers ${command.server_id}/${command.tool_name}`);
  let first: Rejection | undefined;
  for (const { grant, index } of candidates) {
    const exposure = exposureFor(grant, command.requested_cost);
    if (typeof exposure !== 'bigint') {
      first ??= exposure;
      continue;
    }
    const chain = grantChain(state, { capability_id: capability.id, grant_index: index });
    const periods = periodsFor(state, chain, command.now_ms);
    const fitted = fitExposure(state, chain, periods, exposure, command.min_cost);
    const limit =
      typeof fitted === 'bigint'
        ? (checkLimits(state, chain, fitted, periods) ??
          (command.preflight
            ? undefined
            : checkRateLimits(
                state,
                chain,
                command.now_ms,
                command.requested_tokens,
                command.concurrency_retry_after_ms ?? 1_000,
              )))
        : fitted;
    if (limit) {
      first ??= limit;
      continue;
    }
    return accept(holdAuthorized(command, grant, index, chain, fitted as bigint, periods));
  }
  return { ok: false, rejection: first! };
}

/**
 * B20 (ADR 0058): a command that has its answer takes no hold and captures none. Decided on
 * the state the commit lands on, so a run whose cache predates the answer (a re-send to
 * another replica) is refused here instead of capturing a hold that nothing would end.
 */
function checkUnanswered(commandId: string | undefined, state: TreeState): Decision | undefined {
  if (commandId === undefined || !state.command_receipts.has(commandId)) return undefined;
  return reject('command_already_answered', `command ${commandId} already has a receipt`);
}

/** B7/B8: a request id takes one hold, ever. A concurrent twin sees the same authorized hold. */
function checkReplay(command: AuthorizeHold, state: TreeState): Decision | undefined {
  const existingId = state.requests.get(command.request_id);
  if (command.preflight) {
    if (state.preflights.has(command.request_id) || existingId !== undefined)
      return reject('preflight_replayed', 'execution nonce preflight was already performed for this request');
    return undefined;
  }
  if (existingId === undefined) return undefined;
  const existing = state.holds.get(existingId)!;
  if (existing.status === 'authorized') return accept();
  if (existing.status === 'reversed') return reject('request_replayed', 'request id was already used');
  return reject(
    'already_dispatched',
    existing.monetary ? 'monetary invocation was already dispatched' : 'invocation was already dispatched',
  );
}

export function matches(grant: Grant, serverId: string, toolName: string): boolean {
  return grant.server_id === serverId && (grant.tool_name === '*' || grant.tool_name === toolName);
}

export function isMonetary(grant: Grant): boolean {
  return grant.max_cost_per_invocation !== undefined || grant.max_total_cost_units !== undefined;
}

/** B1: exposure = requested_cost ≤ max_cost_per_invocation, or max_cost_per_invocation when none is requested. */
export function exposureFor(grant: Grant, requested: bigint | undefined): bigint | Rejection {
  if (!isMonetary(grant)) return 0n;
  if (requested !== undefined) {
    if (requested < 0n) return { code: 'cost_required', message: 'requested cost must not be negative' };
    if (grant.max_cost_per_invocation !== undefined && requested > grant.max_cost_per_invocation) {
      return {
        code: 'requested_cost_exceeds_max_per_invocation',
        message: 'requested cost exceeds max_cost_per_invocation',
      };
    }
    return requested;
  }
  if (grant.max_cost_per_invocation !== undefined) return grant.max_cost_per_invocation;
  return { code: 'cost_required', message: 'a requested cost is required for this grant' };
}

/**
 * The refusal of a grant or budget whose booked spend is past its limit (ADR 0043): a
 * provider billed beyond its hold, and nothing is admitted until the limit covers the spend.
 */
export const BUDGET_OVERRUN = 'budget overrun: spend is past the limit';

/**
 * Every grant of the chain and every capability on it must have room for one more invocation
 * and the exposure. Room below zero (an overrun booked past the limit) refuses every admission.
 */
export function checkLimits(
  state: TreeState,
  chain: readonly GrantRef[],
  exposure: bigint,
  periods?: readonly (Period | null)[],
): Rejection | undefined {
  for (const [index, ref] of chain.entries()) {
    const capability = state.capabilities.get(ref.capability_id)!;
    const grant = capability.grants[ref.grant_index]!;
    // A grant with a reset limits its period's usage (the one the command's time falls in).
    const usage = limitedUsageOf(state, ref, periods?.[index]?.start_ms);
    if (grant.max_invocations !== undefined && usage.invocation_count + 1 > grant.max_invocations)
      return { code: 'max_invocations_reached', message: 'max invocations reached' };
    if (grant.max_cost_per_invocation !== undefined && exposure > grant.max_cost_per_invocation)
      return {
        code: 'requested_cost_exceeds_max_per_invocation',
        message: 'requested cost exceeds max_cost_per_invocation',
      };
    if (grant.max_total_cost_units !== undefined) {
      const committed = committedOf(usage);
      if (committed > grant.max_total_cost_units) return { code: 'budget_overrun', message: BUDGET_OVERRUN };
      if (committed + exposure > grant.max_total_cost_units)
        return { code: 'total_cost_limit_reached', message: 'budget exhausted' };
    }
    if (capability.budget_units !== undefined) {
      const committed = spendOf(state, capability.id).committed_units;
      if (committed > capability.budget_units) return { code: 'budget_overrun', message: BUDGET_OVERRUN };
      if (committed + exposure > capability.budget_units)
        return { code: 'capability_budget_exhausted', message: 'delegated budget exhausted' };
    }
  }
  return undefined;
}

function holdAuthorized(
  command: AuthorizeHold,
  grant: Grant,
  index: number,
  chain: readonly GrantRef[],
  exposure: bigint,
  periods: readonly (Period | null)[] | undefined,
): BudgetEvent {
  const monetary = isMonetary(grant);
  const id = command.preflight
    ? preflightHoldId(command.request_id, command.capability_id, index)
    : holdId(command.request_id, command.capability_id, index);
  return {
    type: 'HoldAuthorized',
    event_id: EventIds.authorize(id),
    data: {
      kind: monetary && !command.preflight ? 'authorize_exposure' : 'reserve_invocation',
      hold_id: id,
      request_id: command.request_id,
      ...(command.command_id === undefined ? {} : { command_id: command.command_id }),
      capability_id: command.capability_id,
      grant_index: index,
      chain,
      exposure_units: exposure,
      ...(grant.currency === undefined ? {} : { currency: grant.currency }),
      monetary,
      preflight: command.preflight,
      binding: {
        subject: command.subject,
        server_id: command.server_id,
        tool_name: command.tool_name,
        parameters_hash: command.parameters_hash,
      },
      context: command.context,
      expires_at_ms: command.now_ms + command.hold_ttl_ms,
      at_ms: command.now_ms,
      ...(periods === undefined ? {} : { periods }),
      ...(command.requested_tokens === undefined || command.preflight ? {} : { tokens: command.requested_tokens }),
    },
  };
}

export function decideCapture(command: CaptureInvocation, state: TreeState): Decision {
  const holdId = command.same_commit ? state.requests.get(command.request_id) : command.hold_id;
  const hold = holdId === undefined ? undefined : state.holds.get(holdId);
  if (!hold) return reject('hold_unknown', `hold ${holdId ?? 'of the request'} is unknown`);
  if (hold.preflight) return reject('hold_not_authorized', 'a preflight hold is never captured');
  if (
    hold.status === 'captured' ||
    hold.status === 'settled' ||
    hold.status === 'retained' ||
    hold.status === 'released' ||
    hold.status === 'cancelled'
  ) {
    return reject(
      'already_dispatched',
      hold.monetary ? 'monetary invocation was already dispatched' : 'invocation was already dispatched',
    );
  }
  if (hold.status !== 'authorized') return reject('hold_not_authorized', 'budget hold is no longer authorized');
  if (hold.expires_at_ms <= command.now_ms) return reject('hold_expired', 'budget hold expired before capture');
  const answered = checkUnanswered(command.command_id, state);
  if (answered) return answered;
  const capability = verifyCapability(state, hold.capability_id, undefined, command.now_ms);
  if (isRejection(capability)) return { ok: false, rejection: capability };
  const kind = hold.monetary ? 'capture_invocation' : 'increment_invocation';
  const by = command.command_id === undefined ? {} : { command_id: command.command_id };
  if (command.same_commit)
    return accept({
      type: 'InvocationCaptured',
      event_id: EventIds.captureInSameCommit(hold.hold_id),
      data: { kind, hold_id: hold.hold_id, same_commit: true, ...by, at_ms: command.now_ms },
    });
  return accept({
    type: 'InvocationCaptured',
    event_id: EventIds.capture(hold.hold_id, hold.authorize_commit_index),
    data: {
      kind,
      hold_id: hold.hold_id,
      authorize_commit_index: hold.authorize_commit_index,
      ...by,
      at_ms: command.now_ms,
    },
  });
}

export const reverseKind = (hold: Hold): 'reverse_exposure' | 'reverse_invocation' =>
  hold.monetary && !hold.preflight ? 'reverse_exposure' : 'reverse_invocation';

export function decideRollback(command: RollbackHold, state: TreeState): Decision {
  const hold = state.holds.get(command.hold_id);
  if (!hold) return reject('hold_unknown', `hold ${command.hold_id} is unknown`);
  if (hold.status === 'reversed') return accept();
  if (hold.status !== 'authorized')
    return reject('hold_not_authorized', `hold ${hold.hold_id} is ${hold.status}, not authorized`);
  const kind = reverseKind(hold);
  return accept({
    type: 'HoldReversed',
    event_id: EventIds.rollback(hold.hold_id, hold.authorize_commit_index, kind),
    data: { kind, hold_id: hold.hold_id, cause: command.cause, at_ms: command.now_ms },
  });
}

export function decideCancel(command: CancelCaptured, state: TreeState): Decision {
  const hold = state.holds.get(command.hold_id);
  if (!hold) return reject('hold_unknown', `hold ${command.hold_id} is unknown`);
  if (hold.status === 'cancelled') return accept();
  if (hold.status !== 'captured' || hold.capture_commit_index === undefined)
    return reject('hold_not_captured', `hold ${hold.hold_id} is ${hold.status}, not captured`);
  return accept({
    type: 'CaptureCancelled',
    event_id: EventIds.cancelCaptured(hold.hold_id, hold.capture_commit_index),
    data: {
      kind: 'cancel_captured_before_dispatch',
      hold_id: hold.hold_id,
      cause: command.cause,
      at_ms: command.now_ms,
    },
  });
}

/** B20: an uncaptured hold past its TTL is reversed. Captured holds never expire. */
export function decideExpire(command: ExpireHolds, state: TreeState): Decision {
  const events: BudgetEvent[] = [];
  for (const hold of state.holds.values()) {
    if (events.length >= command.holds_max) break;
    if (hold.status !== 'authorized' || hold.expires_at_ms > command.now_ms) continue;
    const kind = reverseKind(hold);
    events.push({
      type: 'HoldReversed',
      event_id: EventIds.expire(hold.hold_id, hold.authorize_commit_index),
      data: { kind, hold_id: hold.hold_id, cause: 'expired', at_ms: command.now_ms },
    });
  }
  return accept(...events);
}
