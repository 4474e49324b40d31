// Wire DTOs (validated by class-validator) -> application commands, and decisions ->
// wire JSON. Shared by the HTTP API and the durable command handlers, so the two twins
// read and answer exactly alike. Cross-field rules the DTOs cannot state are checked
// here and reported as field errors, like any other validation failure.
import { createHash } from 'node:crypto';
import {
  boundaryTextErrors,
  moneyFromWire,
  PARAMETERS_DEPTH_MAX,
  moneyToWire,
  type AdmitCommandDto,
  type FieldError,
  type IncreaseHoldDto,
  type IssueCapabilityDto,
  type SettleCommandDto,
} from '@tally/contracts';
import type {
  AdmitCommand,
  AdmitDecision,
  HoldAuthorization,
  IncreaseCommand,
  IssueCapabilityCommand,
  SettleCommand,
} from '@tally/budget-application';
import type { AdmitContext, BudgetReset, Grant, SettleOutcome } from '@tally/budget-domain';
import { canonicalJson } from '@tally/budget-infrastructure';

export type Mapped<T> =
  { readonly ok: true; readonly command: T } | { readonly ok: false; readonly errors: FieldError[] };

/** The hash an execution nonce and a hold are bound to: SHA-256 of the canonical JSON of the parameters. */
export function parametersHash(parameters: Record<string, unknown> | undefined): string {
  return createHash('sha256')
    .update(canonicalJson(parameters ?? {}))
    .digest('hex');
}

export function toAdmitCommand(dto: AdmitCommandDto, commandId: string, bearer?: string): Mapped<AdmitCommand> {
  const errors: FieldError[] = [];
  const token = dto.token ?? bearer;
  if (token === undefined) errors.push({ field: 'token', message: 'token is required' });
  if (dto.token !== undefined && bearer !== undefined && dto.token !== bearer)
    errors.push({ field: 'token', message: 'token differs from the capability token the request is authorized with' });
  let context: AdmitContext = { kind: 'standalone' };
  if (dto.context?.kind === 'session') {
    if (dto.context.session_id === undefined)
      errors.push({ field: 'context.session_id', message: 'session_id is required when kind is session' });
    else context = { kind: 'session', session_id: dto.context.session_id };
  }
  // Bounded before it is hashed: the canonical form recurses once per level.
  const deep = boundaryTextErrors(dto.parameters, 'parameters', PARAMETERS_DEPTH_MAX);
  if (deep.length > 0) return { ok: false, errors: [...errors, ...deep] };
  const hash = parametersHash(dto.parameters);
  if (dto.parameters_hash !== undefined && dto.parameters !== undefined && dto.parameters_hash !== hash) {
    errors.push({
      field: 'parameters_hash',
      message: 'parameters_hash does not match the SHA-256 of the canonical JSON of parameters',
    });
  }
  if (errors.length > 0) return { ok: false, errors };
  return {
    ok: true,
    command: {
      command_id: commandId,
      request_id: dto.request_id,
      token: token!,
      server_id: dto.server_id,
      tool_name: dto.tool_name,
      parameters_hash: dto.parameters_hash ?? hash,
      ...(dto.requested_cost === undefined ? {} : { requested_cost: moneyFromWire(dto.requested_cost)! }),
      ...(dto.execution_nonce === undefined ? {} : { execution_nonce: dto.execution_nonce }),
      context,
      ...(dto.requested_tokens === undefined ? {} : { requested_tokens: dto.requested_tokens }),
      ...(dto.min_cost === undefined ? {} : { min_cost: moneyFromWire(dto.min_cost)! }),
    },
  };
}

/** `authorization` is who asks: the HTTP caller, or the proof or token a NATS command carries. */
export function toSettleCommand(
  dto: SettleCommandDto,
  commandId: string,
  authorization: HoldAuthorization | undefined,
): Mapped<SettleCommand> {
  const o = dto.outcome;
  const missing = (field: string): Mapped<SettleCommand> => ({
    ok: false,
    errors: [{ field: `outcome.${field}`, message: `${field} is required when kind is ${o.kind}` }],
  });
  let outcome: SettleOutcome;
  switch (o.kind) {
    case 'completed':
      if (o.cost_units === undefined) return missing('cost_units');
      outcome = {
        kind: 'completed',
        cost_units: moneyFromWire(o.cost_units)!,
        ...(o.currency === undefined ? {} : { currency: o.currency }),
      };
      break;
    case 'failed_after_dispatch':
      if (o.failure === undefined) return missing('failure');
      outcome = { kind: 'failed_after_dispatch', failure: o.failure };
      break;
    case 'elicitation_required':
      if (o.message === undefined) return missing('message');
      outcome = { kind: 'elicitation_required', message: o.message };
      break;
    case 'not_dispatched':
      outcome = { kind: 'not_dispatched', reason: o.reason ?? o.message ?? 'not dispatched' };
      break;
  }
  return {
    ok: true,
    command: {
      command_id: commandId,
      hold_id: dto.hold_id,
      outcome,
      ...(o.tokens_used === undefined ? {} : { tokens_used: o.tokens_used }),
      authorization,
    },
  };
}

export function toIncreaseCommand(
  dto: IncreaseHoldDto,
  commandId: string,
  authorization: HoldAuthorization | undefined,
): IncreaseCommand {
  return {
    authorization,
    command_id: commandId,
    hold_id: dto.hold_id,
    amount_units: moneyFromWire(dto.amount_units)!,
    ...(dto.currency === undefined ? {} : { currency: dto.currency }),
    ...(dto.tokens === undefined ? {} : { tokens: dto.tokens }),
  };
}

/** `tenantId`: the tenant a root capability belongs to, as the caller's credential decides it. */
export function toIssueCommand(
  dto: IssueCapabilityDto,
  commandId: string | undefined,
  tenantId?: string,
): IssueCapabilityCommand {
  const grants: Grant[] = dto.grants.map((g) => ({
    server_id: g.server_id,
    tool_name: g.tool_name,
    ...(g.max_invocations === undefined ? {} : { max_invocations: g.max_invocations }),
    ...(g.max_cost_per_invocation === undefined
      ? {}
      : { max_cost_per_invocation: moneyFromWire(g.max_cost_per_invocation)! }),
    ...(g.max_total_cost_units === undefined ? {} : { max_total_cost_units: moneyFromWire(g.max_total_cost_units)! }),
    ...(g.currency === undefined ? {} : { currency: g.currency }),
    ...(g.reset === undefined ? {} : { reset: resetOf(g.reset) }),
    ...(g.rate_limits === undefined ? {} : { rate_limits: { ...g.rate_limits } }),
    ...(g.alert_at_percent === undefined ? {} : { alert_at_percent: [...g.alert_at_percent] }),
    ...(g.hold_cap_units === undefined ? {} : { hold_cap_units: moneyFromWire(g.hold_cap_units)! }),
  }));
  return {
    ...(commandId === undefined ? {} : { command_id: commandId }),
    subject_public_key: dto.subject_public_key,
    ...(dto.bind === undefined ? {} : { bind: dto.bind }),
    ttl_seconds: dto.ttl_seconds,
    grants,
    ...(dto.parent_id === undefined ? {} : { parent_id: dto.parent_id }),
    ...(tenantId === undefined ? {} : { tenant_id: tenantId }),
    ...(dto.budget_share_units === undefined ? {} : { budget_share_units: moneyFromWire(dto.budget_share_units)! }),
  };
}

/** `period_seconds` cuts time on the epoch; otherwise `every` in `timezone` (the domain names what is missing). */
function resetOf(dto: NonNullable<IssueCapabilityDto['grants'][number]['reset']>): BudgetReset {
  if (dto.period_seconds !== undefined) return { period_seconds: dto.period_seconds };
  return {
    every: dto.every as Extract<BudgetReset, { every: unknown }>['every'],
    ...(dto.timezone === undefined ? {} : { timezone: dto.timezone }),
  };
}

/** The Admit reply: {verdict, reason?, hold_id?, grant_index?, execution_nonce?, admission_proof?, receipt} plus dispatch. */
export function decisionToWire(decision: AdmitDecision): Record<string, unknown> {
  return wireJson({
    verdict: decision.verdict,
    ...(decision.reason === undefined ? {} : { reason: decision.reason }),
    ...(decision.hold_id === undefined ? {} : { hold_id: decision.hold_id }),
    ...(decision.grant_index === undefined ? {} : { grant_index: decision.grant_index }),
    dispatch: decision.dispatch,
    ...(decision.execution_nonce === undefined ? {} : { execution_nonce: decision.execution_nonce }),
    ...(decision.admission_proof === undefined ? {} : { admission_proof: decision.admission_proof }),
    ...(decision.retry_after_ms === undefined ? {} : { retry_after_ms: decision.retry_after_ms }),
    ...(decision.hold_units === undefined ? {} : { hold_units: decision.hold_units }),
    receipt: decision.receipt,
  }) as Record<string, unknown>;
}

/** JSON-safe copy: bigint money becomes a number up to 2^53-1, else a decimal string. */
export function wireJson(value: unknown): unknown {
  if (typeof value === 'bigint') return moneyToWire(value);
  if (Array.isArray(value)) return value.map(wireJson);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) if (item !== undefined) out[key] = wireJson(item);
    return out;
  }
  return value;
}
