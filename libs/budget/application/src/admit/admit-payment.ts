// The steps of an Admit from the payment on: authorize the payment exactly once (B3),
// consume the nonce and allow, or unwind before dispatch. Money and budget come back only
// on a definite, confirmed outcome (B9); anything else is retained and recorded.
import { EventIds, type BudgetCommand, type CancelCause } from '@tally/budget-domain';
import { moneyToWire } from '@tally/contracts';
import { Reasons } from '../authority-context.js';
import type { PaymentAuthorizeResult, PaymentResult } from '../ports.js';
import type { AdmitDecision } from '../receipts.js';
import { signProof } from '../tokens.js';
import type { AdmitFlow } from './admit-flow.js';

export const needsPayment = (flow: AdmitFlow): boolean => flow.hold!.monetary && flow.hold!.exposure_units > 0n;

export async function authorizePayment(flow: AdmitFlow): Promise<AdmitDecision | undefined> {
  const hold = flow.hold!;
  const request = {
    reference: flow.cmd.request_id,
    hold_id: hold.hold_id,
    amount_units: hold.exposure_units,
    currency: hold.currency ?? 'XXX',
  };
  let result: PaymentAuthorizeResult;
  try {
    result = await flow.ctx.rail.authorize(request);
  } catch {
    result = { outcome: 'rail_error', detail: 'rail threw' };
  }
  const step = (
    s: 'authorized' | 'declined' | 'insufficient_funds' | 'ambiguous',
    extra: object = {},
  ): BudgetCommand => ({
    type: 'RecordPaymentStep',
    hold_id: hold.hold_id,
    payment: { step: s, amount_units: request.amount_units, currency: request.currency, ...extra },
    now_ms: flow.now(),
  });
  flow.meta.financial.payment_amount_units = moneyToWire(request.amount_units);
  flow.meta.financial.payment_idempotency_reference = request.reference;
  switch (result.outcome) {
    case 'authorized':
      flow.payment = { authorization_id: result.authorization_id, mode: result.mode };
      Object.assign(flow.meta.financial, {
        payment_reference: result.authorization_id,
        payment_mode: result.mode,
        payment_authorized: true,
      });
      flow.pending.push(step('authorized', { authorization_id: result.authorization_id, mode: result.mode }));
      return undefined;
    case 'declined':
    case 'insufficient_funds':
      flow.meta.financial.payment_authorization = result.outcome;
      flow.pending.push(step(result.outcome));
      return cancelBeforeDispatch(
        flow,
        result.outcome === 'declined' ? Reasons.paymentDeclined : Reasons.insufficientFunds,
        'payment_declined',
      );
    case 'unavailable':
    case 'rail_error':
      // Ambiguous: the rail may have authorized. Deny and keep the admission; the reconciler asks the rail later.
      Object.assign(flow.meta.financial, {
        payment_authorization_ambiguous: true,
        payment_reference: request.reference,
      });
      flow.captureSection().admission_retained = true;
      flow.pending.push(step('ambiguous'));
      flow.recordAmbiguity('payment_authorization', undefined, undefined);
      await flow.releaseLease();
      return flow.deny(Reasons.paymentAmbiguous);
  }
}

/** Cancels the capture before dispatch (kind cancel_captured_before_dispatch); a lost ack is read back (B11, B12). */
export async function cancelBeforeDispatch(
  flow: AdmitFlow,
  reason: string,
  cause: CancelCause,
): Promise<AdmitDecision> {
  const hold = flow.hold!;
  const cancelId = EventIds.cancelCaptured(hold.hold_id, hold.capture_commit_index!);
  const facts = flow.pending;
  flow.pending = [];
  const out = await flow.ctx.trees.step(flow.root, () => [
    ...facts,
    { type: 'CancelCaptured', hold_id: hold.hold_id, cause, now_ms: flow.now() },
  ]);
  if (out.kind === 'committed') {
    const event = out.events.find((e) => e.event_id === cancelId);
    flow.meta.budget_authority.cancel_captured_before_dispatch = {
      event_id: cancelId,
      budget_commit_index: event?.commit_index ?? null,
    };
    flow.refresh(out.state);
    await flow.releaseLease();
    return flow.deny(reason);
  }
  flow.meta.budget_authority.cancel_captured_before_dispatch = { event_id: cancelId, cancellation_ambiguous: true };
  flow.captureSection().admission_retained = true;
  if (out.kind === 'unknown') flow.recordAmbiguity('cancellation', cancelId, out.present);
  else flow.pending.push(...facts);
  await flow.releaseLease();
  return flow.deny(Reasons.cancellationUnconfirmed);
}

/** Steps 8 and 9: consume the nonce and allow, in one append with the signed receipt and admission proof. */
export async function allow(flow: AdmitFlow): Promise<AdmitDecision> {
  const hold = flow.hold!;
  const proof = signProof(flow.ctx.signer, {
    hold_id: hold.hold_id,
    request_id: flow.cmd.request_id,
    capability_id: hold.capability_id,
    grant_index: hold.grant_index,
    server_id: flow.cmd.server_id,
    tool_name: flow.cmd.tool_name,
    parameters_hash: flow.cmd.parameters_hash,
    capture_event_id: hold.capture_event_id!,
    capture_commit_index: hold.capture_commit_index!,
    ...(flow.payment ? { payment_authorization_id: flow.payment.authorization_id } : {}),
    issued_at_ms: flow.now(),
  });
  const facts: BudgetCommand[] = [];
  if (flow.nonce) {
    facts.push({ type: 'ConsumeNonce', nonce: flow.nonce, now_ms: flow.now() });
    flow.meta.execution_nonce = { ...flow.meta.execution_nonce, consumed: true };
  }
  facts.push({ type: 'AdmitInvocation', hold_id: hold.hold_id, now_ms: flow.now() });
  flow.meta.budget_authority.terminal = false;
  // hold_units: what the hold covers, which is less than asked when it was fitted (min_cost).
  const extras = { dispatch: true, admission_proof: proof, hold_units: moneyToWire(hold.exposure_units) };
  const paid = flow.pending;
  const written = await flow.tryAnswer('allow', Reasons.admitted, extras, facts);
  if (written.kind === 'answered') {
    const answer = written.decision;
    if (answer.verdict === 'allow' && answer.hold_id === hold.hold_id) return answer;
    // Another run of this command was answered first, e.g. denied after its own append went
    // unacknowledged, while this one captured the hold and authorized the payment: nothing will
    // dispatch on that answer, so this run gives back what it took (the payment, then the budget).
    flow.superseded = answer;
    flow.pending = paid.filter((f) => f.type === 'RecordPaymentStep' || f.type === 'RecordLease');
    flow.meta.budget_authority.terminal = true;
    return unwindAfterPayment(flow, answer.reason ?? Reasons.admitted);
  }
  if (written.rejection.code === 'already_admitted') return deferToAdmitted(flow);
  // The nonce was consumed elsewhere (B16), or the hold changed under us: unwind before anything dispatches.
  if (flow.nonce)
    flow.meta.execution_nonce = {
      nonce_id: flow.nonce.nonce_id,
      presented: true,
      already_consumed: written.rejection.code === 'nonce_already_consumed',
    };
  flow.meta.budget_authority.terminal = true;
  return unwindAfterPayment(
    flow,
    written.rejection.code === 'nonce_already_consumed' ? Reasons.nonceConsumed : written.rejection.message,
  );
}

/**
 * F1 (B8): another command of this request (a twin) was allowed on the hold. Its dispatch and
 * settlement own the hold, the lease and the payment authorization (the rail knows one per
 * request id), so this run gives back nothing and is denied as a replay.
 */
async function deferToAdmitted(flow: AdmitFlow): Promise<AdmitDecision> {
  flow.pending = [];
  flow.leaseId = undefined;
  flow.meta.budget_authority.terminal = true;
  const hold = flow.hold!;
  return flow.deny(hold.monetary ? 'monetary invocation was already dispatched' : 'invocation was already dispatched');
}

/** B16/B12/B9: release the payment; only a confirmed release lets the capture be cancelled. */
export async function unwindAfterPayment(flow: AdmitFlow, reason: string): Promise<AdmitDecision> {
  if (!flow.payment) return cancelBeforeDispatch(flow, reason, 'not_dispatched');
  const hold = flow.hold!;
  const reference = flow.cmd.request_id;
  let result: PaymentResult;
  try {
    result =
      flow.payment.mode === 'prepaid_final'
        ? await flow.ctx.rail.refund({
            transaction_id: flow.payment.authorization_id,
            amount_units: hold.exposure_units,
            currency: hold.currency ?? 'XXX',
            reference,
          })
        : await flow.ctx.rail.release({ authorization_id: flow.payment.authorization_id, reference });
  } catch {
    result = { outcome: 'rail_error', detail: 'rail threw' };
  }
  const financial = flow.meta.financial;
  financial.payment_release_attempt_reference = reference;
  if (result.outcome === 'released' || result.outcome === 'refunded') {
    Object.assign(financial, {
      payment_release_confirmed: true,
      payment_release_status: result.outcome,
      payment_release_reference: result.rail_reference,
    });
    flow.pending.push({
      type: 'RecordPaymentStep',
      hold_id: hold.hold_id,
      payment: { step: result.outcome, rail_reference: result.rail_reference },
      now_ms: flow.now(),
    });
    return cancelBeforeDispatch(flow, reason, 'payment_released');
  }
  const status = result.outcome === 'pending' ? 'pending' : result.outcome === 'failed' ? 'failed' : 'unknown';
  Object.assign(financial, {
    payment_release_unconfirmed: true,
    payment_authorization_retained: true,
    payment_release_status: status,
  });
  if (result.outcome === 'pending' || result.outcome === 'settled')
    financial.payment_release_reference = result.rail_reference;
  flow.captureSection().admission_retained = true;
  const step = result.outcome === 'pending' ? 'release_pending' : 'release_failed';
  flow.pending.push({
    type: 'RecordPaymentStep',
    hold_id: hold.hold_id,
    payment: { step, ...('rail_reference' in result ? { rail_reference: result.rail_reference } : {}) },
    now_ms: flow.now(),
  });
  flow.recordAmbiguity('payment_release', undefined, undefined);
  await flow.releaseLease();
  return flow.deny(Reasons.paymentReleaseUnconfirmed);
}
