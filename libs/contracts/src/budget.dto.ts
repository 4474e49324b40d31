// Wire DTOs of the budget-authority: the Admit and Settle commands (over JetStream, and
// their HTTP twins) and capability issuance. Money fields accept a JSON number up to
// 2^53-1 or a decimal string above it, never more than 2^63-1 (ADR 0044); counts and token
// figures are integers with an explicit range.
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  Min,
  ValidateBy,
  ValidateNested,
  type ValidationOptions,
} from 'class-validator';
import { MONEY_MESSAGE, moneyFromWire } from './money.js';
import { CAPABILITY_TTL_SECONDS_MAX } from './revocation.js';

export type WireMoney = number | string;

/** The most tokens one command may hold, use or add: the bound of every token figure of the budget commands. */
export const TOKENS_MAX = 1_000_000_000;

/** An amount: integer minor units in [0, 2^63-1], as a safe JSON number or a decimal string. */
export function IsMoney(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isMoney',
      validator: {
        validate: (value: unknown) => moneyFromWire(value) !== undefined,
        defaultMessage: (args) => `${args?.property} ${MONEY_MESSAGE}`,
      },
    },
    options,
  );
}

export class AdmitContextDto {
  @IsIn(['standalone', 'session']) kind!: 'standalone' | 'session';
  @IsOptional() @IsString() @Length(1, 128) session_id?: string;
  @IsOptional() @IsString() @Length(1, 128) work_id?: string;
}

export class AdmitCommandDto {
  @IsString() @Length(1, 256) request_id!: string;
  /** Required over NATS; over HTTP the capability token may come as a bearer instead. */
  @IsOptional() @IsString() @Length(1, 16_384) token?: string;
  @IsString() @Length(1, 128) server_id!: string;
  @IsString() @Length(1, 128) tool_name!: string;
  @IsOptional() @IsObject() parameters?: Record<string, unknown>;
  @IsOptional() @Matches(/^[0-9a-f]{64}$/) parameters_hash?: string;
  @IsOptional() @IsMoney() requested_cost?: WireMoney;
  @IsOptional() @IsString() @Length(1, 16_384) execution_nonce?: string;
  @IsOptional() @ValidateNested() @Type(() => AdmitContextDto) context?: AdmitContextDto;
  /** Worst-case tokens of the call, held against the grant's tokens_per_minute. */
  @IsOptional() @IsInt() @Min(0) @Max(TOKENS_MAX) requested_tokens?: number;
  /** The smallest hold the caller can use: a hold that does not fit whole is fitted down to it (hold_units). */
  @IsOptional() @IsMoney() min_cost?: WireMoney;
}

export const SETTLE_KINDS = ['completed', 'failed_after_dispatch', 'elicitation_required', 'not_dispatched'] as const;
export const FAILURE_KINDS = ['cancellation', 'deadline', 'incomplete', 'generic', 'tool_not_registered'] as const;

export class SettleOutcomeDto {
  @IsIn(SETTLE_KINDS as unknown as string[]) kind!: (typeof SETTLE_KINDS)[number];
  @IsOptional() @IsMoney() cost_units?: WireMoney;
  @IsOptional() @Matches(/^[A-Z]{3}$/) currency?: string;
  @IsOptional() @IsIn(FAILURE_KINDS as unknown as string[]) failure?: (typeof FAILURE_KINDS)[number];
  @IsOptional() @IsString() @Length(0, 4_096) message?: string;
  @IsOptional() @IsString() @Length(0, 1_024) reason?: string;
  /** Tokens the call used: corrects its share of the grant's tokens_per_minute. */
  @IsOptional() @IsInt() @Min(0) @Max(TOKENS_MAX) tokens_used?: number;
}

/** The signed admission proof an Admit answered with; it is bound to its hold id. */
export class AdmissionProofDto {
  @IsObject() claims!: Record<string, unknown>;
  @IsString() @Length(1, 64) key_id!: string;
  @IsString() @Length(1, 256) signature!: string;
}

export class SettleCommandDto {
  @IsString() @Length(1, 1_024) hold_id!: string;
  @ValidateNested() @Type(() => SettleOutcomeDto) outcome!: SettleOutcomeDto;
  /** Proof that the caller was admitted on this hold (http-api.md, Credentials). */
  @IsOptional() @ValidateNested() @Type(() => AdmissionProofDto) admission_proof?: AdmissionProofDto;
  /** Over NATS, instead of the proof: the token of the capability the hold was admitted on. */
  @IsOptional() @IsString() @Length(1, 16_384) token?: string;
}

/** POST /v1/holds/{id}/increase and its NATS twin: raise an open hold within its grant. */
export class IncreaseHoldDto {
  @IsString() @Length(1, 1_024) hold_id!: string;
  @IsMoney() amount_units!: WireMoney;
  /** The currency of amount_units; one that is not the hold's is refused (currency_mismatch). */
  @IsOptional() @Matches(/^[A-Z]{3}$/) currency?: string;
  @IsOptional() @IsInt() @Min(0) @Max(TOKENS_MAX) tokens?: number;
  @IsOptional() @ValidateNested() @Type(() => AdmissionProofDto) admission_proof?: AdmissionProofDto;
  /** Over NATS, instead of the proof: the token of the capability the hold was admitted on. */
  @IsOptional() @IsString() @Length(1, 16_384) token?: string;
}

/** Spend policy (http-api.md): a calendar period in an IANA zone, or period_seconds on the epoch. */
export class ResetDto {
  @IsOptional() @IsIn(['minute', 'hour', 'day', 'week', 'month']) every?: 'minute' | 'hour' | 'day' | 'week' | 'month';
  @IsOptional() @IsString() @Length(1, 64) @IsTimeZone() timezone?: string;
  @IsOptional() @IsInt() @Min(1) @Max(316_224_000) period_seconds?: number;
}

export class RateLimitsDto {
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000) requests_per_minute?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000) tokens_per_minute?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000) max_concurrent?: number;
}

/** A zone Intl knows: the periods of a grant are cut in it. */
export function IsTimeZone(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isTimeZone',
      validator: {
        validate: (value: unknown) => {
          if (typeof value !== 'string') return false;
          try {
            new Intl.DateTimeFormat('en-US', { timeZone: value });
            return true;
          } catch {
            return false;
          }
        },
        defaultMessage: (args) => `${args?.property} must be an IANA time zone, e.g. Europe/Berlin`,
      },
    },
    options,
  );
}

export class GrantDto {
  @IsString() @Length(1, 128) server_id!: string;
  @IsString() @Length(1, 128) tool_name!: string;
  @IsOptional() @IsInt() @Min(0) @Max(1_000_000_000) max_invocations?: number;
  @IsOptional() @IsMoney() max_cost_per_invocation?: WireMoney;
  @IsOptional() @IsMoney() max_total_cost_units?: WireMoney;
  @IsOptional() @Matches(/^[A-Z]{3}$/) currency?: string;
  @IsOptional() @ValidateNested() @Type(() => ResetDto) reset?: ResetDto;
  @IsOptional() @ValidateNested() @Type(() => RateLimitsDto) rate_limits?: RateLimitsDto;
  @IsOptional()
  @ArrayMaxSize(16)
  @IsInt({ each: true })
  @Min(1, { each: true })
  @Max(100, { each: true })
  alert_at_percent?: number[];
  @IsOptional() @IsMoney() hold_cap_units?: WireMoney;
}

export class IssueCapabilityDto {
  @Matches(/^[A-Za-z0-9_-]{43}$/, {
    message: 'subject_public_key must be the base64url (unpadded) raw 32-byte Ed25519 public key',
  })
  subject_public_key!: string;
  /** `subject_key`: admissions, work submissions and delegations must be signed with that key (RFC 9421, ADR 0011). */
  @IsOptional() @IsIn(['subject_key'], { message: 'bind must be "subject_key"' }) bind?: 'subject_key';
  @IsInt() @Min(1) @Max(CAPABILITY_TTL_SECONDS_MAX) ttl_seconds!: number;
  @ArrayMinSize(1) @ArrayMaxSize(64) @ValidateNested({ each: true }) @Type(() => GrantDto) grants!: GrantDto[];
  @IsOptional() @IsString() @Length(1, 256) parent_id?: string;
  /** Delegation by possession: the parent capability's token (http-api.md, Credentials). */
  @IsOptional() @IsString() @Length(1, 16_384) parent_token?: string;
  @IsOptional() @IsMoney() budget_share_units?: WireMoney;
  /** The owning tenant of a root capability; only an admin may name one (others issue in their own). */
  @IsOptional()
  @Matches(/^[a-z0-9][a-z0-9_-]{0,62}$/, { message: 'tenant_id must be a tenant id (a-z, 0-9, _ and -, 1 to 63)' })
  tenant_id?: string;
}

/** POST /v1/capabilities/{id}/revoke: an issuer needs no body; otherwise the token of the capability or an ancestor. */
export class RevokeCapabilityDto {
  @IsOptional() @IsString() @Length(1, 16_384) token?: string;
}
