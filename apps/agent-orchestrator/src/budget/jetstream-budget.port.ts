// The BudgetPort over commands to the budget authority, core NATS request/reply by default
// (ADR 0025) or the durable JetStream commands (ADR 0003): Admit before every paid dispatch,
// Settle after it, each with the stable command id the dispatch worker derives from (work,
// ordinal), so a redelivered unit gets the answer the first try got (the authority answers
// a re-sent id from its ledger). A timeout throws: the outcome is unknown, the unit is not
// dispatched, and its queue message is retried later with the same command ids (fail closed).
import { moneyFromWire, moneyToWire, type AdmitCommandDto, type SettleCommandDto } from '@tally/contracts';
import type {
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
  readonly grant_index?: number;
  readonly retry_after_ms?: number;
  readonly hold_units?: number | string;
  readonly receipt?: unknown;
}

interface SettleReply {
  readonly receipt?: unknown;
}

/** The authority refused a Settle outright; the hold stays as it is and the unit waits (fail closed). */
export class SettleRefused extends Error {
  override readonly name = 'SettleRefused';
}

export class JetStreamBudgetPort implements BudgetPort {
  readonly credentialRequired = true;

  constructor(
    private readonly client: CommandSender,
    private readonly options: JetStreamBudgetOptions,
  ) {}

  async admit(request: AdmitRequest): Promise<AdmitDecision> {
    const payload: AdmitCommandDto = {
      request_id: request.request_id,
      token: request.token,
      server_id: request.server_id,
      tool_name: request.tool_name,
      requested_cost: moneyToWire(request.requested_cost_units),
      context: { kind: 'session', session_id: request.context.session_id, work_id: request.context.work_id },
      ...(request.requested_tokens === undefined ? {} : { requested_tokens: request.requested_tokens }),
      ...(request.min_cost_units === undefined ? {} : { min_cost: moneyToWire(request.min_cost_units) }),
    };
    const reply = await this.client.send<AdmitReply>(
      'budget',
      'admit',
      request.command_id,
      payload,
      this.sendOptions(),
    );
    return admitDecisionOf(reply);
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
    return { receipt: reply.value.receipt };
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
    };
  }
  const retry = value.retry_after_ms;
  return {
    verdict: 'deny',
    reason: value.reason ?? 'denied without a reason',
    ...(typeof retry === 'number' && Number.isFinite(retry) && retry >= 0 ? { retry_after_ms: Math.round(retry) } : {}),
  };
}
