// A payment rail reached over HTTP (ADR 0052): the adapter a real rail (or its gateway)
// sits behind. Every call that moves money carries an Idempotency-Key that names the one
// operation it performs (`capture:<authorization id>`), so two replicas that both capture
// the same hold send the same key, and a rail that honours idempotency keys performs the
// capture once and answers the second call as it answered the first.
//
// Any answer the adapter cannot read as a definite outcome (a timeout, a refused connection,
// a non-2xx status, a body of another shape) is `rail_error`: ambiguous, so the authority
// records it and the reconciler asks the rail later, never assuming either outcome.
import type { PaymentAuthorizeResult, PaymentMode, PaymentResult, SettlementState } from './simulated-payment-rail.js';

export interface HttpPaymentRailOptions {
  /** The rail's base URL; the operations are paths below it. */
  readonly baseUrl: string;
  /** How long one call may take before its outcome is treated as unknown. */
  readonly timeoutMs: number;
}

/** The longest answer accepted from the rail; anything longer is not an answer this adapter knows. */
const ANSWER_BYTES_MAX = 64 * 1024;

const MODES: readonly PaymentMode[] = ['reversible_hold', 'prepaid_final'];
const PAYMENT_OUTCOMES = ['settled', 'released', 'refunded', 'pending', 'failed', 'unavailable', 'rail_error'];
const STATES = ['none', 'authorized', 'captured', 'released', 'refunded', 'pending', 'declined'];

type Answer =
  { readonly ok: true; readonly body: Record<string, unknown> } | { readonly ok: false; readonly detail: string };

export class HttpPaymentRail {
  private readonly base: string;

  constructor(private readonly options: HttpPaymentRailOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
  }

  async authorize(request: {
    reference: string;
    hold_id: string;
    amount_units: bigint;
    currency: string;
  }): Promise<PaymentAuthorizeResult> {
    const answer = await this.call('POST', '/authorizations', `authorize:${request.hold_id}`, {
      reference: request.reference,
      hold_id: request.hold_id,
      amount_units: request.amount_units.toString(),
      currency: request.currency,
    });
    return answer.ok ? authorizeResultOf(answer.body) : { outcome: 'rail_error', detail: answer.detail };
  }

  async capture(request: {
    authorization_id: string;
    amount_units: bigint;
    currency: string;
    reference: string;
  }): Promise<PaymentResult> {
    return this.payment('/captures', `capture:${request.authorization_id}`, {
      authorization_id: request.authorization_id,
      amount_units: request.amount_units.toString(),
      currency: request.currency,
      reference: request.reference,
    });
  }

  async release(request: { authorization_id: string; reference: string }): Promise<PaymentResult> {
    return this.payment('/releases', `release:${request.authorization_id}`, { ...request });
  }

  async refund(request: {
    transaction_id: string;
    amount_units: bigint;
    currency: string;
    reference: string;
  }): Promise<PaymentResult> {
    return this.payment('/refunds', `refund:${request.transaction_id}`, {
      transaction_id: request.transaction_id,
      amount_units: request.amount_units.toString(),
      currency: request.currency,
      reference: request.reference,
    });
  }

  async settlementState(reference: string): Promise<SettlementState> {
    const answer = await this.call('GET', `/settlements/${encodeURIComponent(reference)}`, undefined, undefined);
    if (!answer.ok) return { state: 'unknown', detail: answer.detail };
    const { state, authorization_id } = answer.body;
    if (typeof state !== 'string' || !STATES.includes(state))
      return { state: 'unknown', detail: 'the rail answered a settlement state this adapter does not know' };
    return {
      state: state as Exclude<SettlementState, { state: 'unknown' }>['state'],
      ...(typeof authorization_id === 'string' ? { authorization_id } : {}),
    };
  }

  private async payment(path: string, key: string, body: Record<string, unknown>): Promise<PaymentResult> {
    const answer = await this.call('POST', path, key, body);
    return answer.ok ? paymentResultOf(answer.body) : { outcome: 'rail_error', detail: answer.detail };
  }

  private async call(method: string, path: string, key: string | undefined, body: unknown): Promise<Answer> {
    try {
      const res = await fetch(`${this.base}${path}`, {
        method,
        headers: {
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(key === undefined ? {} : { 'idempotency-key': key }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(this.options.timeoutMs),
        redirect: 'error',
      });
      const text = await res.text();
      if (res.status < 200 || res.status > 299) return { ok: false, detail: `the rail answered HTTP ${res.status}` };
      if (text.length > ANSWER_BYTES_MAX) return { ok: false, detail: 'the rail answered more than an answer holds' };
      const parsed = JSON.parse(text) as unknown;
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
        return { ok: false, detail: 'the rail answered something other than a JSON object' };
      return { ok: true, body: parsed as Record<string, unknown> };
    } catch (error) {
      // The call may have reached the rail: its outcome is unknown, whatever went wrong here.
      return { ok: false, detail: `the rail call did not complete: ${(error as Error).name}` };
    }
  }
}

function authorizeResultOf(body: Record<string, unknown>): PaymentAuthorizeResult {
  const detail = typeof body['detail'] === 'string' ? body['detail'].slice(0, 200) : 'no detail';
  switch (body['outcome']) {
    case 'authorized': {
      const { authorization_id: id, mode } = body;
      if (typeof id !== 'string' || id.length === 0 || !MODES.includes(mode as PaymentMode)) break;
      return { outcome: 'authorized', authorization_id: id, mode: mode as PaymentMode };
    }
    case 'declined':
      return { outcome: 'declined', detail };
    case 'insufficient_funds':
      return { outcome: 'insufficient_funds' };
    case 'unavailable':
      return { outcome: 'unavailable', detail };
  }
  return { outcome: 'rail_error', detail: 'the rail answered an authorization this adapter cannot read' };
}

function paymentResultOf(body: Record<string, unknown>): PaymentResult {
  const outcome = body['outcome'];
  if (typeof outcome !== 'string' || !PAYMENT_OUTCOMES.includes(outcome))
    return { outcome: 'rail_error', detail: 'the rail answered an outcome this adapter does not know' };
  if (outcome === 'failed' || outcome === 'unavailable' || outcome === 'rail_error')
    return { outcome, detail: typeof body['detail'] === 'string' ? body['detail'].slice(0, 200) : 'no detail' };
  const reference = body['rail_reference'];
  if (typeof reference !== 'string' || reference.length === 0)
    return { outcome: 'rail_error', detail: 'the rail confirmed without a rail_reference' };
  return { outcome: outcome as 'settled' | 'released' | 'refunded' | 'pending', rail_reference: reference };
}
