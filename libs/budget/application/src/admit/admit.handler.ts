// Admit: the entry point. A retried command id gets its original answer; a token that
// does not verify is denied with a receipt on the unverified subject; everything else
// runs the steps in the spec's order.
import { Reasons, UNVERIFIED_TREE, type AuthorityContext } from '../authority-context.js';
import { answeredCommand, decisionFrom, type AdmitDecision } from '../receipts.js';
import { writeReceipt } from '../receipt-writer.js';
import { openToken, type CapabilityClaims } from '../tokens.js';
import { StreamFull } from '@tally/eventing';
import { AdmissionOutstanding, AdmitFlow, type AdmitCommand } from './admit-flow.js';
import { allow, authorizePayment, needsPayment } from './admit-payment.js';
import {
  authorizeAndCapture,
  authorizeHold,
  captureInvocation,
  capturesWithAuthorize,
  checkPresentedNonce,
  preflightNonce,
  reserveLease,
} from './admit-steps.js';

export async function admit(ctx: AuthorityContext, cmd: AdmitCommand): Promise<AdmitDecision> {
  const claims = openToken<CapabilityClaims>(ctx.signer, 'c1', cmd.token, true);
  if (!claims) return denyUnverified(ctx, cmd);
  // A stale cache is fine here: a command answered elsewhere is caught when its receipt is appended.
  const answered = answeredCommand(await ctx.trees.cachedOrRead(claims.root_id), cmd.command_id);
  if (answered) return decisionFrom(answered);
  const flow = new AdmitFlow(ctx, cmd, claims);
  try {
    return await run(flow);
  } catch (error) {
    throw retryableAfterCapture(flow, error);
  }
}

/**
 * A full stream is a final refusal only when nothing of the command was stored (ADR 0002).
 * Once its capture committed, the hold stands: the answer must make the caller re-send, so
 * that a re-run goes on from the capture when the stream has room (ADR 0058).
 */
function retryableAfterCapture(flow: AdmitFlow, error: unknown): unknown {
  if (!(error instanceof StreamFull) || flow.hold?.capture_commit_index === undefined) return error;
  return new AdmissionOutstanding(flow.cmd.command_id, error.message);
}

async function run(flow: AdmitFlow): Promise<AdmitDecision> {
  const merged = capturesWithAuthorize(flow);
  const early = await (merged ? authorizeAndCapture(flow) : authorizeHold(flow));
  if (early) return early;
  if (!flow.resumed && !merged) {
    const captured = await leaseAndCapture(flow);
    if (captured) return captured;
  }
  if (needsPayment(flow)) {
    const unpaid = await authorizePayment(flow);
    if (unpaid) return unpaid;
  }
  return allow(flow);
}

/** Steps 4 to 6: the hook's lease, the nonce preflight or the presented nonce's check, and the capture. */
async function leaseAndCapture(flow: AdmitFlow): Promise<AdmitDecision | undefined> {
  const denied = await reserveLease(flow);
  if (denied) return denied;
  if (flow.preflight) return preflightNonce(flow);
  if (flow.cmd.execution_nonce !== undefined) {
    const rejected = await checkPresentedNonce(flow);
    if (rejected) return rejected;
  }
  return captureInvocation(flow);
}

async function denyUnverified(ctx: AuthorityContext, cmd: AdmitCommand): Promise<AdmitDecision> {
  const fields = {
    kind: 'admission' as const,
    verdict: 'deny' as const,
    reason: Reasons.capabilityInvalid,
    request_id: cmd.request_id,
    capability_id: null,
    hold_id: null,
    grant_index: null,
    server_id: cmd.server_id,
    tool_name: cmd.tool_name,
    context: cmd.context,
    metadata: { budget_authority: {}, financial: {} },
  };
  const written = await writeReceipt(ctx, UNVERIFIED_TREE, cmd.command_id, fields, [], { dispatch: false });
  if (written.kind === 'rejected')
    throw new Error(`receipt for ${cmd.command_id} was rejected: ${written.rejection.message}`);
  return {
    verdict: 'deny',
    reason: written.receipt.reason ?? Reasons.capabilityInvalid,
    dispatch: false,
    receipt: written.receipt,
  };
}
