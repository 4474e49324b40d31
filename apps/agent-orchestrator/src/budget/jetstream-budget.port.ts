// The BudgetPort over commands to the budget authority, core NATS request/reply by default
// (ADR 0025) or the durable JetStream commands (ADR 0003): Admit before every paid dispatch,
// Settle after it, each with the stable command id the dispatch worker derives from (work,
// ordinal), so a redelivered unit gets the answer the first try got (the authority answers
// a re-sent id from its ledger). A timeout throws: the outcome is unknown, the unit is not
// dispatched, and its queue message is retried later with the same command ids (fail closed).
// When the authority requires an execution nonce, its answer to the Admit is a preflight
// that hands one out; the port redeems it at once with a second Admit (ADR 0046).
import { moneyFromWire, moneyToWire, type AdmitCommandDto, type SettleCommandDto } from '@tally/contracts';
import type {
  AdmissionProofWire,
  AdmitDecision,
  AdmitRequest,
  BudgetPort,
  SettleRequest,
  SettleResult,
} from '@tally/orchestrator-application';
import type { CommandReply, CommandSender } from '@tally/platform-nest';

export interface JetStreamBudgetOptions {
  /** How long each publish waits for the authority's reply. */
  readonly replyTimeoutMs: number;
  /** Sends per command, all with the same command id. */
  readonly attemptsMax: number;
}

interface AdmitReply {
  readonly verdict: 'allow' | 'deny';
  readonly reason?: string;
  readonly hold_id?: string;
  /** False for a nonce preflight (B13): an allow that hands out a nonce and must not be dispatched. */
  readonly dispatch?: boolean;
  /** The nonce a preflight hands out, bound to the request id and parameters hash; presented by the redeem. */
  readonly execution_nonce?: string;
  readonly admission_proof?: AdmissionProofWire;
  readonly grant_index?: number;
  readonly retry_after_ms?: number;
  readonly hold_units?: number | string;
  readonly receipt?: unknown;
}

interface SettleReply {
  readonly receipt?: {
    readonly verdict?: string;
    readonly reason?: string | null;
    readonly capability_id?: string | null;
  };
}

/** Checks an admission proof's signature against the authority's published keys, and that it names the hold. */
export interface AdmissionProofCheck {
  verify(proof: AdmissionProofWire, holdId: string): Promise<boolean>;
}

/** The authority refused a Settle outright; the hold stays as it is and the unit waits (fail closed). */
export class SettleRefused extends Error {
  override readonly name = 'SettleRefused';
}

const UNVERIFIED = 'admission_unverified: the admission proof does not verify for its hold, request and parameters';
/** The most characters of a nonce the port presents, as the Admit command accepts (AdmitCommandDto). */
const EXECUTION_NONCE_CHARS_MAX = 16_384;

export class JetStreamBudgetPort implements BudgetPort {
  readonly credentialRequired = true;

  constructor(
    private readonly client: CommandSender,
    private readonly options: JetStreamBudgetOptions,
    private readonly proofs: AdmissionProofCheck,
  ) {}

  async admit(request: AdmitRequest): Promise<AdmitDecision> {
    const payload = admitPayloadOf(request);
    let asked = request;
    let reply = await this.sendAdmit(request.command_id, payload);
    const nonce = preflightNonceOf(reply);
    if (nonce !== undefined) {
      // B13: the nonce is redeemed under a command id derived from the first, so a redelivered unit
      // replays both asks and gets both answers again; the preflight itself is never dispatched.
      asked = { ...request, command_id: nonceCommandId(request.command_id) };
      reply = await this.sendAdmit(asked.command_id, { ...payload, execution_nonce: nonce });
    }
    const decision = admitDecisionOf(reply);
    const refusal = await this.refusalOf(decision, request, nonce !== undefined);
    if (refusal === undefined) return decision;
    if (refusal === UNVERIFIED) await this.releaseUnverified(asked, decision.hold_id!);
    return { verdict: 'deny', reason: refusal };
  }

  private sendAdmit(commandId: string, payload: AdmitCommandDto): Promise<CommandReply<AdmitReply>> {
    return this.client.send<AdmitReply>('budget', 'admit', commandId, payload, this.sendOptions());
  }

  /**
   * Fail closed: only an allow that says dispatch and carries a proof, signed by a published
   * key for this very hold and naming this request and its parameters hash, may lead to a
   * paid call. A preflight that is not redeemed, or a second preflight in answer to the
   * redeem, is refused and left to the authority's expiry (it was never captured); an
   * unverifiable answer is refused too, and released by the caller.
   */
  private async refusalOf(
    decision: AdmitDecision,
    request: AdmitRequest,
    redeemed: boolean,
  ): Promise<string | undefined> {
    if (decision.verdict !== 'allow') return undefined;
    if (decision.dispatch !== true)
      return redeemed
        ? 'not_dispatchable: the redeem of the execution nonce did not say dispatch (another preflight)'
        : 'not_dispatchable: the admission did not say dispatch (a nonce preflight)';
    const proof = decision.admission_proof;
    if (proof === undefined || decision.hold_id === undefined || !(await this.proofs.verify(proof, decision.hold_id)))
      return UNVERIFIED;
    if (proof.claims['request_id'] !== request.request_id) return UNVERIFIED;
    if (proof.claims['parameters_hash'] !== request.parameters_hash) return UNVERIFIED;
    return undefined;
  }

  /**
   * An admission said dispatch but its proof did not verify here (e.g. this replica's key view
   * has not seen a new signing key yet). The hold may be real, captured and paid for: expiry
   * never reverses a captured hold (B20), so it would stay exposed for good. It is settled
   * not_dispatched at once, which is true, with the token as the right to settle. A hold the
   * authority does not know (the answer was not its own) has nothing to release. Anything
   * else throws: the unit is retried, gets the same answer, and releases it then.
   */
  private async releaseUnverified(request: AdmitRequest, holdId: string): Promise<void> {
    try {
      await this.settle({
        command_id: `${request.command_id}:release-unverified`,
        hold_id: holdId,
        outcome: { kind: 'not_dispatched', reason: 'the admission proof did not verify at the orchestrator' },
        token: request.token,
      });
    } catch (error) {
      if (!(error instanceof SettleRefused)) throw error;
    }
  }

  async settle(request: SettleRequest): Promise<SettleResult> {
    const outcome = request.outcome;
    const payload: SettleCommandDto = {
      hold_id: request.hold_id,
      outcome:
        outcome.kind === 'completed'
          ? {
              kind: 'completed',
              cost_units: moneyToWire(outcome.cost_units),
              currency: outcome.currency,
              ...(outcome.tokens_used === undefined ? {} : { tokens_used: outcome.tokens_used }),
            }
          : outcome.kind === 'failed_after_dispatch'
            ? { kind: 'failed_after_dispatch', failure: outcome.failure }
            : { kind: 'not_dispatched', reason: outcome.reason.slice(0, 1_024) },
      // The right to settle this hold: the authority refuses a settle without one like an unknown hold.
      ...(request.admission_proof === undefined
        ? {}
        : { admission_proof: request.admission_proof as SettleCommandDto['admission_proof'] }),
      ...(request.token === undefined ? {} : { token: request.token }),
    };
    const reply: CommandReply<SettleReply> = await this.client.send<SettleReply>(
      'budget',
      'settle',
      request.command_id,
      payload,
      this.sendOptions(),
    );
    if (!reply.ok)
      throw new SettleRefused(
        `the budget authority refused settle ${request.command_id} of hold ${request.hold_id}: ${reply.error.type}: ${reply.error.message}`,
      );
    const receipt = reply.value.receipt;
    // Not applied: the hold is unknown to this command (or it proved no right to it). The unit waits and retries.
    if (receipt?.verdict === 'deny' && receipt.reason === 'hold is unknown' && (receipt.capability_id ?? null) === null)
      throw new SettleRefused(
        `the budget authority does not know hold ${request.hold_id} for settle ${request.command_id}`,
      );
    return { receipt };
  }

  private sendOptions() {
    return { timeoutMs: this.options.replyTimeoutMs, attemptsMax: this.options.attemptsMax };
  }
}

/**
 * A refusal of the command itself (invalid, rejected, dead-lettered) is a final answer
 * for that command id, cached by the authority: the attempt is denied with its reason.
 */
export function admitDecisionOf(reply: CommandReply<AdmitReply>): AdmitDecision {
  if (!reply.ok) return { verdict: 'deny', reason: `${reply.error.type}: ${reply.error.message}` };
  const value = reply.value;
  if (value.verdict === 'allow') {
    const held = value.hold_units === undefined ? undefined : moneyFromWire(value.hold_units);
    return {
      verdict: 'allow',
      ...(value.hold_id === undefined ? {} : { hold_id: value.hold_id }),
      ...(held === undefined ? {} : { hold_units: held }),
      ...(value.dispatch === undefined ? {} : { dispatch: value.dispatch }),
      ...(value.admission_proof === undefined ? {} : { admission_proof: value.admission_proof }),
    };
  }
  const retry = value.retry_after_ms;
  return {
    verdict: 'deny',
    reason: value.reason ?? 'denied without a reason',
    ...(typeof retry === 'number' && Number.isFinite(retry) && retry >= 0 ? { retry_after_ms: Math.round(retry) } : {}),
  };
}

/** The Admit command of a request: its parameters go as their hash only (customer content stays out of the ledger). */
function admitPayloadOf(request: AdmitRequest): AdmitCommandDto {
  return {
    request_id: request.request_id,
    token: request.token,
    server_id: request.server_id,
    tool_name: request.tool_name,
    parameters_hash: request.parameters_hash,
    requested_cost: moneyToWire(request.requested_cost_units),
    context: { kind: 'session', session_id: request.context.session_id, work_id: request.context.work_id },
    ...(request.requested_tokens === undefined ? {} : { requested_tokens: request.requested_tokens }),
    ...(request.min_cost_units === undefined ? {} : { min_cost: moneyToWire(request.min_cost_units) }),
  };
}

/** The command id of the Admit that redeems the nonce handed out in answer to `commandId`. */
export const nonceCommandId = (commandId: string): string => `${commandId}:nonce`;

/** The nonce of a preflight answer (B13: allow, dispatch false, a nonce); undefined for any other answer. */
export function preflightNonceOf(reply: CommandReply<AdmitReply>): string | undefined {
  if (!reply.ok) return undefined;
  const { verdict, dispatch, execution_nonce: nonce } = reply.value;
  if (verdict !== 'allow' || dispatch !== false || typeof nonce !== 'string') return undefined;
  return nonce.length >= 1 && nonce.length <= EXECUTION_NONCE_CHARS_MAX ? nonce : undefined;
}
