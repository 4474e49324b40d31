// B21: the reconciler resolves each recorded ambiguity from facts only: the stream's
// truth (is the event there?) and the rail's settlement state for the reference. Budget
// comes back only when no money is held; money is released only when the rail says it is
// held for a request that was denied, or for a settlement that came to 0. Anything still
// unknown stays open for the next run.
//
// ADR 0059: a hold that was admitted is dispatched, so the reconciler never gives its
// budget back, unless its own settlement asked for that (a release the rail did not
// confirm). Each undo is decided again on the tree as it is when it is appended, so a run
// that admitted the hold meanwhile wins, and the runtime lease of a hold it closed is
// released once the undo committed.
import type { Ambiguity, BudgetCommand, Hold, TreeState } from '@tally/budget-domain';
import type { AuthorityContext } from './authority-context.js';
import { releaseLeasesOf } from './lease-release.js';
import { callRail } from './settlement-steps.js';

export interface Resolution {
  readonly ambiguity_id: string;
  readonly resolution: string | undefined;
}

export interface ReconcilePlan {
  readonly resolution: string;
  readonly facts: BudgetCommand[];
  readonly rail?: string;
  /** The plan gives the hold's budget back: valid only on the hold as it was read. */
  readonly undoes?: true;
}

export async function reconcile(ctx: AuthorityContext, rootId: string): Promise<Resolution[]> {
  const state = await ctx.trees.read(rootId);
  const out: Resolution[] = [];
  for (const ambiguity of openAmbiguities(state)) {
    const hold = state.holds.get(ambiguity.hold_id);
    const plan = hold ? await resolve(ctx, state, ambiguity, hold) : { resolution: 'hold_unknown', facts: [] };
    if (!plan) {
      out.push({ ambiguity_id: ambiguity.ambiguity_id, resolution: undefined });
      continue;
    }
    const step = await ctx.trees.step(rootId, (truth) => onTruth(ctx, truth, ambiguity, hold, plan));
    const resolved = step.kind === 'committed' && step.events.some((e) => e.type === 'AmbiguityResolved');
    if (resolved && plan.undoes && hold) await releaseLeasesOf(ctx, rootId, step.state, [hold.hold_id]);
    out.push({ ambiguity_id: ambiguity.ambiguity_id, resolution: resolved ? plan.resolution : undefined });
  }
  return out;
}

/**
 * The plan's facts and its resolution, when an undo still applies to the hold as it is now;
 * otherwise only what the rail did (true whatever became of the hold), and the ambiguity
 * stays open for the next run to decide on the newer hold.
 */
function onTruth(
  ctx: AuthorityContext,
  truth: TreeState,
  ambiguity: Ambiguity,
  read: Hold | undefined,
  plan: ReconcilePlan,
): BudgetCommand[] {
  const now = read && truth.holds.get(read.hold_id);
  const unchanged =
    now !== undefined &&
    now.status === read!.status &&
    now.admitted === read!.admitted &&
    now.payment.status === read!.payment.status;
  if (plan.undoes && !unchanged) return plan.facts.filter((f) => f.type === 'RecordPaymentStep');
  return [
    ...plan.facts,
    {
      type: 'ResolveAmbiguity',
      ambiguity_id: ambiguity.ambiguity_id,
      resolution: plan.resolution,
      ...(plan.rail ? { rail_state: plan.rail } : {}),
      now_ms: ctx.clock.nowMs(),
    },
  ];
}

async function resolve(
  ctx: AuthorityContext,
  state: TreeState,
  ambiguity: Ambiguity,
  hold: Hold,
): Promise<ReconcilePlan | undefined> {
  const now = ctx.clock.nowMs();
  const cancel: BudgetCommand = { type: 'CancelCaptured', hold_id: hold.hold_id, cause: 'reconciled', now_ms: now };
  const rollback: BudgetCommand = { type: 'RollbackHold', hold_id: hold.hold_id, cause: 'reconciled', now_ms: now };
  switch (ambiguity.kind) {
    case 'invocation_capture':
    case 'reverse':
      if (hold.status === 'authorized')
        return { resolution: `${ambiguity.kind}_absent_reversed`, facts: [rollback], undoes: true };
      if (hold.status === 'captured' && !hold.admitted)
        return afterMoneyCheck(ctx, hold, 'capture_committed_cancelled', [cancel]);
      return { resolution: `${ambiguity.kind}_committed`, facts: [] };
    case 'cancellation':
      if (hold.status !== 'captured') return { resolution: 'cancellation_committed', facts: [] };
      if (!mayUndo(state, hold)) return { resolution: 'cancellation_hold_admitted', facts: [] };
      return { resolution: 'cancellation_reapplied', facts: [cancel], undoes: true };
    case 'payment_authorization':
    case 'payment_release':
      if (hold.status !== 'captured') return { resolution: 'hold_already_terminal', facts: [] };
      // Its settlement captures or releases the payment of a dispatched hold: nothing here may.
      if (!mayUndo(state, hold)) return { resolution: `${ambiguity.kind}_hold_admitted`, facts: [] };
      return afterMoneyCheck(ctx, hold, 'payment_released_cancelled', [cancel]);
    case 'payment_capture':
      return resolveCapture(ctx, hold);
    case 'settlement_missing':
      // The orchestrator's own record resolves it (ADR 0047): no fact the reconciler reads can.
      return undefined;
  }
}

/**
 * Whether the reconciler may give the hold's budget back: it was never admitted, or it was
 * and its own settlement asked for the release (not dispatched, or an elicitation) that the
 * rail did not confirm. An admitted hold without one is dispatched: its settlement ends it.
 */
function mayUndo(state: TreeState, hold: Hold): boolean {
  if (!hold.admitted) return true;
  for (const r of state.receipts.values())
    if (r.hold_id === hold.hold_id && r.body['kind'] === 'settlement' && r.body['settlement'] === 'release_unconfirmed')
      return true;
  return false;
}

/**
 * Runs `facts` only once the rail shows no money held for the request, releasing it first
 * when it is held. The rail is asked, not the ledger: a run may have died after the rail
 * authorized and before the ledger recorded it.
 */
export async function afterMoneyCheck(
  ctx: AuthorityContext,
  hold: Hold,
  resolution: string,
  facts: BudgetCommand[],
): Promise<ReconcilePlan | undefined> {
  const rail = await ctx.rail.settlementState(hold.request_id);
  const now = ctx.clock.nowMs();
  if (rail.state === 'none' || rail.state === 'declined' || rail.state === 'released' || rail.state === 'refunded') {
    const known = rail.state === 'released' || rail.state === 'refunded' ? [paymentStep(hold, rail.state, now)] : [];
    return { resolution, facts: [...known, ...facts], rail: rail.state, undoes: true };
  }
  if (rail.state !== 'authorized' && rail.state !== 'captured') return undefined;
  const authorization = rail.authorization_id ?? hold.payment.authorization_id;
  if (authorization === undefined) return undefined;
  const result = await callRail(() =>
    rail.state === 'captured'
      ? ctx.rail.refund({
          transaction_id: authorization,
          amount_units: hold.exposure_units,
          currency: hold.currency ?? 'XXX',
          reference: hold.request_id,
        })
      : ctx.rail.release({ authorization_id: authorization, reference: hold.request_id }),
  );
  if (result.outcome !== 'released' && result.outcome !== 'refunded') return undefined;
  return { resolution, facts: [paymentStep(hold, result.outcome, now), ...facts], rail: rail.state, undoes: true };
}

/**
 * B4, B21 (ADR 0059): a settlement's capture (or, at cost 0, its release) that the rail did
 * not confirm. The ledger already booked the settlement; the rail's state says what is left
 * to do: a capture it shows is recorded, an authorization it still holds is captured for
 * the amount the ledger booked (released when that is 0), so the rail's authorization never
 * outlives the ledger's view of it. A pending release or an unknown state waits.
 */
async function resolveCapture(ctx: AuthorityContext, hold: Hold): Promise<ReconcilePlan | undefined> {
  const rail = await ctx.rail.settlementState(hold.request_id);
  const now = ctx.clock.nowMs();
  switch (rail.state) {
    case 'captured':
      return { resolution: 'payment_capture_confirmed', facts: [paymentStep(hold, 'captured', now)], rail: rail.state };
    case 'released':
    case 'refunded':
      return {
        resolution: `payment_capture_${rail.state}`,
        facts: [paymentStep(hold, rail.state, now)],
        rail: rail.state,
      };
    case 'none':
    case 'declined':
      return { resolution: 'payment_capture_nothing_held', facts: [], rail: rail.state };
    case 'authorized':
      return completeCapture(ctx, hold, rail.authorization_id);
    default:
      return undefined;
  }
}

/** Captures what the settled hold booked (never beyond its exposure), or releases the authorization at 0. */
async function completeCapture(
  ctx: AuthorityContext,
  hold: Hold,
  railAuthorization: string | undefined,
): Promise<ReconcilePlan | undefined> {
  const authorization = railAuthorization ?? hold.payment.authorization_id;
  if (hold.status !== 'settled' || hold.realized_units === undefined || authorization === undefined) return undefined;
  const amount = hold.realized_units < hold.exposure_units ? hold.realized_units : hold.exposure_units;
  const reference = hold.request_id;
  const result = await callRail(() =>
    amount === 0n
      ? ctx.rail.release({ authorization_id: authorization, reference })
      : ctx.rail.capture({
          authorization_id: authorization,
          amount_units: amount,
          currency: hold.currency ?? 'XXX',
          reference,
        }),
  );
  const now = ctx.clock.nowMs();
  const railReference = 'rail_reference' in result ? { rail_reference: result.rail_reference } : {};
  if (amount === 0n && result.outcome === 'released')
    return {
      resolution: 'payment_capture_released',
      facts: [paymentStep(hold, 'released', now, railReference)],
      rail: 'authorized',
    };
  if (amount > 0n && result.outcome === 'settled')
    return {
      resolution: 'payment_capture_completed',
      facts: [paymentStep(hold, 'captured', now, { amount_units: amount, ...railReference })],
      rail: 'authorized',
    };
  return undefined;
}

function paymentStep(
  hold: Hold,
  step: 'captured' | 'released' | 'refunded',
  now: number,
  extra: { amount_units?: bigint; rail_reference?: string } = {},
): BudgetCommand {
  return { type: 'RecordPaymentStep', hold_id: hold.hold_id, payment: { step, ...extra }, now_ms: now };
}

export function openAmbiguities(state: TreeState): Ambiguity[] {
  return [...state.ambiguities.values()].filter((a) => a.resolution === undefined);
}
