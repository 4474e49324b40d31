// The steps of an Admit before the payment: authorize the hold, take the lease, the
// nonce preflight or presented-nonce check, and the capture. Each returns a decision when
// the path ends there, or undefined to go on.
import {
  EventIds,
  nonceId,
  reverseKind,
  type BudgetCommand,
  type Hold,
  type Rejection,
  type TreeState,
} from '@tally/budget-domain';
import { Reasons } from '../authority-context.js';
import { answeredCommand, decisionFrom, type AdmitDecision } from '../receipts.js';
import { openToken, sealToken, type NonceClaims } from '../tokens.js';
import type { AdmitFlow } from './admit-flow.js';

function authorizeCommand(flow: AdmitFlow): Extract<BudgetCommand, { type: 'AuthorizeHold' }> {
  const { cmd } = flow;
  return {
    type: 'AuthorizeHold',
    command_id: cmd.command_id,
    request_id: cmd.request_id,
    capability_id: flow.claims.id,
    subject: flow.claims.subject_public_key,
    server_id: cmd.server_id,
    tool_name: cmd.tool_name,
    parameters_hash: cmd.parameters_hash,
    ...(cmd.requested_cost === undefined ? {} : { requested_cost: cmd.requested_cost }),
    preflight: flow.preflight,
    context: cmd.context,
    hold_ttl_ms: flow.ctx.limits.holdTtlMs,
    now_ms: flow.now(),
    ...(cmd.requested_tokens === undefined ? {} : { requested_tokens: cmd.requested_tokens }),
    ...(cmd.min_cost === undefined ? {} : { min_cost: cmd.min_cost }),
    concurrency_retry_after_ms: flow.ctx.limits.concurrencyRetryAfterMs ?? 1_000,
  };
}

/** Whether steps 4 and 5 change nothing for this Admit, so the capture can go in the authorizing commit. */
export function capturesWithAuthorize(flow: AdmitFlow): boolean {
  return (
    flow.ctx.limits.captureWithAuthorize !== false &&
    flow.ctx.hook.passive === true &&
    !flow.preflight &&
    flow.cmd.execution_nonce === undefined
  );
}

export async function authorizeHold(flow: AdmitFlow): Promise<AdmitDecision | undefined> {
  const out = await flow.ctx.trees.step(flow.root, () => [authorizeCommand(flow)]);
  if (out.kind === 'rejected') return afterRefusedAuthorize(flow, out.state, out.rejection);
  const holdId = (flow.preflight ? out.state.preflights : out.state.requests).get(flow.cmd.request_id);
  if (out.kind === 'unknown' || holdId === undefined) {
    // The hold may or may not be durable; if it is, the expiry sweep reverses it (B20).
    flow.meta.budget_authority.authorize = {
      event_id: out.kind === 'unknown' ? out.eventIds[0] : null,
      authorize_ambiguous: true,
    };
    return flow.deny(Reasons.authorizeUnconfirmed);
  }
  recordAuthorized(flow, out.state.holds.get(holdId)!);
  return undefined;
}

/**
 * Steps 3 to 6 in one commit (ADR 0041): with a passive hook and no nonce nothing runs
 * between the authorization and the capture, so both go in the same commit and the
 * capture's id names that commit's index. A lost acknowledgement is a lost capture
 * acknowledgement (B10) once the stream shows the hold captured.
 */
export async function authorizeAndCapture(flow: AdmitFlow): Promise<AdmitDecision | undefined> {
  const authorize = authorizeCommand(flow);
  const out = await flow.ctx.trees.step(flow.root, (state) => [authorize, captureAfter(authorize, state)]);
  if (out.kind === 'rejected') return afterRefusedAuthorize(flow, out.state, out.rejection);
  const holdId = out.state.requests.get(flow.cmd.request_id);
  const hold = holdId === undefined ? undefined : out.state.holds.get(holdId);
  if (out.kind === 'committed' && hold && out.events.some((e) => e.type === 'InvocationCaptured')) {
    recordAuthorized(flow, hold);
    Object.assign(flow.captureSection(), {
      event_id: hold.capture_event_id,
      budget_commit_index: hold.capture_commit_index,
    });
    return undefined;
  }
  const landed =
    out.kind === 'unknown' &&
    hold?.status === 'captured' &&
    (capturedBy(hold) === flow.cmd.command_id || out.present?.has(hold.capture_event_id!) === true);
  // Unreadable after a lost acknowledgement: the hold may be captured, and expiry never reverses a
  // captured hold, so no final answer is given. The caller re-sends the command id and its re-run
  // goes on from the capture if it landed (resumeCaptured), or authorizes afresh if it did not.
  if (out.kind === 'unknown' && out.present === undefined && !landed)
    throw new Error(`the commit authorizing and capturing for ${flow.cmd.command_id} could not be read back`);
  if (!landed) {
    flow.meta.budget_authority.authorize = {
      event_id: out.kind === 'unknown' ? out.eventIds[0]! : null,
      authorize_ambiguous: true,
    };
    return flow.deny(Reasons.authorizeUnconfirmed);
  }
  // The commit is in the stream though its acknowledgement was lost: the hold is captured (B10).
  recordAuthorized(flow, hold);
  const captureId = hold.capture_event_id!;
  Object.assign(flow.captureSection(), {
    event_id: captureId,
    invocation_capture_ambiguous: true,
    admission_retained: true,
  });
  flow.recordAmbiguity('invocation_capture', captureId, new Set([captureId]));
  return flow.deny(Reasons.captureUnconfirmed);
}

/**
 * The capture that goes with `authorize` in one commit: of the hold it creates (its id
 * completed from the commit), or of a twin's hold it finds already authorized (B8), which
 * an earlier commit holds and so has its index already.
 */
function captureAfter(authorize: Extract<BudgetCommand, { type: 'AuthorizeHold' }>, state: TreeState): BudgetCommand {
  const joined = state.requests.get(authorize.request_id);
  const by = { command_id: authorize.command_id, now_ms: authorize.now_ms };
  if (joined !== undefined) return { type: 'CaptureInvocation', hold_id: joined, ...by };
  return { type: 'CaptureInvocation', request_id: authorize.request_id, ...by, same_commit: true };
}

/** The command whose run captured the hold; before that was recorded, the one that authorized it. */
const capturedBy = (hold: Hold): string | undefined => hold.captured_by ?? hold.command_id;

function afterRefusedAuthorize(
  flow: AdmitFlow,
  state: TreeState,
  rejection: Rejection,
): Promise<AdmitDecision | undefined> | undefined {
  // A stale cache let a command through that the stream shows answered (here or by another replica).
  const answered = answeredCommand(state, flow.cmd.command_id);
  if (answered) return Promise.resolve(decisionFrom(answered));
  if (resumeCaptured(flow, state)) return undefined;
  if (rejection.code === 'rate_limited') {
    // Transient: the answer says when to come back, and the caller (the orchestrator's worker) waits that long.
    const retry_after_ms = rejection.retry_after_ms ?? 1_000;
    flow.meta.budget_authority.rate_limit = { message: rejection.message, retry_after_ms };
    return flow.answer('deny', Reasons.rateLimited, { dispatch: false, retry_after_ms });
  }
  return flow.deny(rejection.message);
}

function recordAuthorized(flow: AdmitFlow, hold: Hold): void {
  flow.hold = hold;
  flow.meta.budget_authority.hold_id = hold.hold_id;
  flow.meta.budget_authority.authorize = {
    event_id: EventIds.authorize(hold.hold_id),
    budget_commit_index: hold.authorize_commit_index,
  };
}

export async function reserveLease(flow: AdmitFlow): Promise<AdmitDecision | undefined> {
  const request = {
    request_id: flow.cmd.request_id,
    hold_id: flow.holdId,
    capability_id: flow.claims.id,
    server_id: flow.cmd.server_id,
    tool_name: flow.cmd.tool_name,
    context: flow.cmd.context,
  };
  let verdict;
  try {
    verdict = await flow.ctx.hook.reserve(request);
  } catch {
    verdict = { outcome: 'deny' as const, reason: 'admission hook failed' };
  }
  if (verdict.outcome === 'deny') {
    flow.meta.runtime = { ...flow.meta.runtime, admission_denied: true, hook: flow.ctx.hook.name };
    return preDispatchCleanup(flow, `${Reasons.runtimeDenied}: ${verdict.reason}`);
  }
  if (verdict.lease_id !== undefined) {
    flow.leaseId = verdict.lease_id;
    flow.meta.runtime = { ...flow.meta.runtime, lease_id: verdict.lease_id, hook: flow.ctx.hook.name };
    flow.pending.push({
      type: 'RecordLease',
      hold_id: flow.holdId,
      lease_id: verdict.lease_id,
      outcome: 'reserved',
      now_ms: flow.now(),
    });
  }
  return undefined;
}

/** Rolls back the uncaptured hold and releases the lease; describes the attempt in budget_authority.cleanup_*. */
async function rollback(
  flow: AdmitFlow,
  cause: 'nonce_preflight' | 'pre_dispatch_cleanup',
): Promise<{ confirmed: boolean; released: boolean }> {
  const hold = flow.hold!;
  const attemptId = EventIds.rollback(hold.hold_id, hold.authorize_commit_index, reverseKind(hold));
  Object.assign(flow.meta.budget_authority, {
    cleanup_hold_id: hold.hold_id,
    cleanup_mutation_kind: hold.monetary && !hold.preflight ? 'exposure' : 'invocation',
    cleanup_capability_id: hold.capability_id,
    cleanup_grant_index: hold.grant_index,
    cleanup_attempt_event_id: attemptId,
    cleanup_attempt_event_id_available: true,
  });
  const facts = flow.pending;
  flow.pending = [];
  const out = await flow.ctx.trees.step(flow.root, () => [
    ...facts,
    { type: 'RollbackHold', hold_id: hold.hold_id, cause, now_ms: flow.now() },
  ]);
  if (out.kind === 'unknown') {
    flow.meta.budget_authority.cleanup_ambiguous = true;
    flow.recordAmbiguity('reverse', attemptId, out.present);
  }
  const confirmed =
    out.kind === 'committed' || (out.kind === 'rejected' && out.state.holds.get(hold.hold_id)?.status === 'reversed');
  if (out.kind !== 'unknown') flow.refresh(out.state);
  const released = await flow.releaseLease();
  return { confirmed, released };
}

/** B15: cleanup before capture and payment; deny for `reason` only when every part is confirmed. */
export async function preDispatchCleanup(flow: AdmitFlow, reason: string): Promise<AdmitDecision> {
  const { confirmed, released } = await rollback(flow, 'pre_dispatch_cleanup');
  if (confirmed && released) return flow.deny(reason);
  flow.meta.budget_authority.pre_dispatch_cleanup_unconfirmed = true;
  return flow.deny(Reasons.preDispatchCleanupUnconfirmed);
}

/** B13/B14: the preflight hold is always rolled back; only a fully confirmed cleanup earns a nonce. */
export async function preflightNonce(flow: AdmitFlow): Promise<AdmitDecision> {
  const { confirmed, released } = await rollback(flow, 'nonce_preflight');
  if (!confirmed || !released) {
    flow.meta.execution_nonce = { cleanup_unconfirmed: true };
    return flow.deny(Reasons.preflightCleanupUnconfirmed);
  }
  const hold = flow.hold!;
  const nonce: NonceClaims = {
    nonce_id: nonceId(flow.cmd.request_id, hold.capability_id, hold.grant_index),
    binding: { ...hold.binding, request_id: flow.cmd.request_id, capability_id: hold.capability_id },
    expires_at_ms: flow.now() + flow.ctx.limits.nonceTtlMs,
    key_id: flow.ctx.signer.keyId,
  };
  const token = sealToken(flow.ctx.signer, 'n1', nonce);
  flow.meta.execution_nonce = {
    nonce_id: nonce.nonce_id,
    issued: true,
    expires_at: new Date(nonce.expires_at_ms).toISOString(),
  };
  const issue: BudgetCommand = { type: 'IssueNonce', hold_id: hold.hold_id, nonce, now_ms: flow.now() };
  return flow.answer('allow', Reasons.nonceIssued, { dispatch: false, execution_nonce: token }, [issue]);
}

/** Step 5: a presented nonce must be ours, unexpired and bound to exactly this request (B15). */
export async function checkPresentedNonce(flow: AdmitFlow): Promise<AdmitDecision | undefined> {
  const claims = openToken<NonceClaims>(flow.ctx.signer, 'n1', flow.cmd.execution_nonce!);
  if (!claims) return preDispatchCleanup(flow, Reasons.nonceInvalid);
  const hold = flow.hold!;
  const expected = { ...hold.binding, request_id: flow.cmd.request_id, capability_id: hold.capability_id };
  const b = claims.binding;
  const same =
    b.subject === expected.subject &&
    b.request_id === expected.request_id &&
    b.capability_id === expected.capability_id &&
    b.server_id === expected.server_id &&
    b.tool_name === expected.tool_name &&
    b.parameters_hash === expected.parameters_hash;
  flow.meta.execution_nonce = { nonce_id: claims.nonce_id, presented: true };
  if (!same) return preDispatchCleanup(flow, Reasons.nonceMismatch);
  if (claims.expires_at_ms <= flow.now()) return preDispatchCleanup(flow, Reasons.nonceExpired);
  flow.nonce = { nonce_id: claims.nonce_id, binding: claims.binding, expires_at_ms: claims.expires_at_ms };
  return undefined;
}

/** Step 6 (B2, B10): capture at most once; a lost acknowledgement is read back and recorded, then denied. */
export async function captureInvocation(flow: AdmitFlow): Promise<AdmitDecision | undefined> {
  const captureId = flow.captureEventId();
  const facts = flow.pending;
  flow.pending = [];
  const out = await flow.ctx.trees.step(flow.root, () => [
    ...facts,
    { type: 'CaptureInvocation', hold_id: flow.holdId, command_id: flow.cmd.command_id, now_ms: flow.now() },
  ]);
  if (out.kind === 'committed') {
    const hold = flow.refresh(out.state);
    Object.assign(flow.captureSection(), { event_id: captureId, budget_commit_index: hold.capture_commit_index });
    return undefined;
  }
  if (out.kind === 'rejected') {
    flow.pending = facts.filter((f) => f.type === 'RecordLease');
    await flow.releaseLease();
    if (out.rejection.code === 'already_dispatched' && resumeCaptured(flow, out.state)) {
      // This run's own lease was never recorded on the hold: its release is not a fact of the hold either.
      flow.pending = [];
      return undefined;
    }
    if (out.rejection.code === 'already_dispatched') return flow.deny(out.rejection.message);
    // Also when another run of this command was answered meanwhile (B20): the hold it authorized
    // is given back now rather than at its expiry, and the deny below gets that run's answer.
    return preDispatchCleanup(flow, out.rejection.message);
  }
  Object.assign(flow.captureSection(), {
    event_id: captureId,
    invocation_capture_ambiguous: true,
    admission_retained: true,
  });
  flow.recordAmbiguity('invocation_capture', captureId, out.present);
  await flow.releaseLease();
  return flow.deny(Reasons.captureUnconfirmed);
}

/**
 * A re-run of the command whose first run captured this hold and then stopped answering
 * (its replica crashed, or it is still running elsewhere, e.g. after the caller's retry):
 * it goes on from the payment. The rail is idempotent by request id, so a second
 * authorization is the same one, and only one receipt can be recorded for the command: a
 * run that loses that race answers with the one that won. Runs with an execution nonce
 * never resume (the presented nonce was checked by the first run only): they are denied,
 * failing closed as before.
 */
export function resumeCaptured(flow: AdmitFlow, state: TreeState): boolean {
  if (flow.preflight || flow.cmd.execution_nonce !== undefined) return false;
  const holdId = state.requests.get(flow.cmd.request_id);
  const hold = holdId === undefined ? undefined : state.holds.get(holdId);
  // F1 (B8): a twin's capture of a hold this command authorized is the twin's, not ours to go on from.
  if (!hold || capturedBy(hold) !== flow.cmd.command_id || hold.status !== 'captured' || hold.admitted) return false;
  flow.hold = hold;
  flow.resumed = true;
  flow.meta.budget_authority.hold_id = hold.hold_id;
  flow.meta.budget_authority.authorize = {
    event_id: EventIds.authorize(hold.hold_id),
    budget_commit_index: hold.authorize_commit_index,
  };
  Object.assign(flow.captureSection(), {
    event_id: hold.capture_event_id,
    budget_commit_index: hold.capture_commit_index,
  });
  // The first run's lease is the hold's: a path that does not dispatch releases it.
  if (hold.lease_id !== undefined && !hold.lease_released) flow.leaseId = hold.lease_id;
  return true;
}
