// Wire DTOs of the budget events, validated with class-validator when an event is
// encoded (a bug must not reach the stream) and when it is read back. Amounts are in
// [0, 2^63-1] and counts in [0, 2^53-1] (ADR 0044): a stored event with a wider value is
// refused at decode, naming the field, before any projection tries to write it.
import { COUNT_MAX, MONEY_MESSAGE, moneyFromWire } from '@tally/contracts';
import { Type } from 'class-transformer';
import {
  Equals,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Max,
  Min,
  ValidateBy,
  ValidateIf,
  ValidateNested,
} from 'class-validator';

const IsMoney = () =>
  ValidateBy({
    name: 'isMoney',
    validator: {
      validate: (v: unknown) => moneyFromWire(v) !== undefined,
      defaultMessage: () => `$property ${MONEY_MESSAGE}`,
    },
  });
/** A count or token figure: a JSON number carries it exactly only up to 2^53-1. */
const CountMax = () => Max(COUNT_MAX);
const Id = () => Length(1, 512);
const Ms = () => Min(0);

export class GrantDto {
  @IsString() @Id() server_id!: string;
  @IsString() @Id() tool_name!: string;
  @IsOptional() @IsInt() @Min(0) @CountMax() max_invocations?: number;
  @IsOptional() @IsMoney() max_cost_per_invocation?: number | string;
  @IsOptional() @IsMoney() max_total_cost_units?: number | string;
  @IsOptional() @IsString() @Length(1, 16) currency?: string;
  @IsOptional() @IsInt() @Min(0) parent_grant_index?: number;
  @IsOptional() @IsObject() reset?: Record<string, unknown>;
  @IsOptional() @IsObject() rate_limits?: Record<string, unknown>;
  @IsOptional() @IsArray() @IsInt({ each: true }) alert_at_percent?: number[];
  @IsOptional() @IsMoney() hold_cap_units?: number | string;
}

export class PeriodDto {
  @IsInt() @Ms() start_ms!: number;
  @IsInt() @Ms() end_ms!: number;
}

export class GrantRefDto {
  @IsString() @Id() capability_id!: string;
  @IsInt() @Min(0) grant_index!: number;
}

export class BindingDto {
  @IsString() subject!: string;
  @IsString() @Id() server_id!: string;
  @IsString() @Id() tool_name!: string;
  @IsString() parameters_hash!: string;
}

export class NonceBindingDto extends BindingDto {
  @IsString() @Id() request_id!: string;
  @IsString() @Id() capability_id!: string;
}

export class ContextDto {
  @IsIn(['standalone', 'session']) kind!: string;
  @IsOptional() @IsString() @Id() session_id?: string;
}

export class CapabilityIssuedDto {
  @IsString() @Id() capability_id!: string;
  @IsString() @Id() root_id!: string;
  @IsOptional() @IsString() @Id() parent_id?: string;
  /** Absent on events recorded before tenants existed (the tenant `default`). */
  @IsOptional() @IsString() @Id() tenant_id?: string;
  @IsString() subject_public_key!: string;
  @IsOptional() @IsIn(['subject_key']) bind?: 'subject_key';
  @IsInt() @Ms() issued_at_ms!: number;
  @IsInt() @Ms() expires_at_ms!: number;
  @IsArray() @ValidateNested({ each: true }) @Type(() => GrantDto) grants!: GrantDto[];
  @IsOptional() @IsMoney() budget_units?: number | string;
  @IsInt() @Min(0) depth!: number;
}

export class CapabilityRevokedDto {
  @IsString() @Id() capability_id!: string;
  @IsArray() @IsString({ each: true }) revoked_ids!: string[];
  @IsInt() @Ms() at_ms!: number;
}

export class HoldAuthorizedDto {
  @IsIn(['authorize_exposure', 'reserve_invocation']) kind!: string;
  @IsString() @Id() hold_id!: string;
  @IsString() @Id() request_id!: string;
  @IsOptional() @IsString() @Id() command_id?: string;
  @IsString() @Id() capability_id!: string;
  @IsInt() @Min(0) grant_index!: number;
  @IsArray() @ValidateNested({ each: true }) @Type(() => GrantRefDto) chain!: GrantRefDto[];
  @IsMoney() exposure_units!: number | string;
  @IsOptional() @IsString() currency?: string;
  @IsBoolean() monetary!: boolean;
  @IsBoolean() preflight!: boolean;
  @ValidateNested() @Type(() => BindingDto) binding!: BindingDto;
  @ValidateNested() @Type(() => ContextDto) context!: ContextDto;
  @IsInt() @Ms() expires_at_ms!: number;
  @IsInt() @Ms() at_ms!: number;
  /** One entry per chain grant: its period, or null when it has no reset. */
  @IsOptional() @IsArray() periods?: (PeriodDto | null)[];
  @IsOptional() @IsInt() @Min(0) @CountMax() tokens?: number;
}

export class HoldIncreasedDto {
  @IsIn(['increase_exposure']) kind!: string;
  @IsString() @Id() hold_id!: string;
  @IsInt() @Min(1) @CountMax() increase!: number;
  @IsOptional() @IsString() @Id() command_id?: string;
  @IsMoney() amount_units!: number | string;
  @IsMoney() exposure_units!: number | string;
  @IsOptional() @IsInt() @Min(0) @CountMax() tokens?: number;
  @IsInt() @Ms() at_ms!: number;
}

export class BudgetExhaustedDto {
  @IsString() @Id() capability_id!: string;
  @IsInt() @Min(0) grant_index!: number;
  @IsMoney() committed_units!: number | string;
  @IsMoney() limit_units!: number | string;
  @IsOptional() @IsInt() @Ms() period_start_ms?: number;
  @IsOptional() @IsInt() @Ms() period_end_ms?: number;
  @IsString() @Id() hold_id!: string;
  @IsInt() @Ms() at_ms!: number;
}

export class BudgetThresholdCrossedDto extends BudgetExhaustedDto {
  @IsInt() @Min(1) percent!: number;
}

/** A provider billed beyond its hold (ADR 0043); the figures are of the hold's own grant. */
export class BudgetOverrunDto {
  @IsString() @Id() capability_id!: string;
  @IsInt() @Min(0) grant_index!: number;
  @IsString() @Id() hold_id!: string;
  @IsMoney() realized_units!: number | string;
  @IsMoney() exposure_units!: number | string;
  @IsMoney() hold_overrun_units!: number | string;
  @IsOptional() @IsString() @Length(1, 16) currency?: string;
  @IsMoney() committed_units!: number | string;
  @IsOptional() @IsMoney() limit_units?: number | string;
  @IsOptional() @IsInt() @Ms() period_start_ms?: number;
  @IsOptional() @IsInt() @Ms() period_end_ms?: number;
  @IsInt() @Ms() at_ms!: number;
}

export class InvocationCapturedDto {
  @IsIn(['capture_invocation', 'increment_invocation']) kind!: string;
  @IsString() @Id() hold_id!: string;
  /** Required unless the capture is stored in the authorizing commit (ADR 0041). */
  @ValidateIf((o: InvocationCapturedDto) => o.same_commit !== true) @IsInt() @Min(1) authorize_commit_index?: number;
  @IsOptional() @Equals(true) same_commit?: true;
  @IsOptional() @IsString() @Id() command_id?: string;
  @IsInt() @Ms() at_ms!: number;
}

export class HoldReversedDto {
  @IsIn(['reverse_exposure', 'reverse_invocation']) kind!: string;
  @IsString() @Id() hold_id!: string;
  @IsIn(['nonce_preflight', 'pre_dispatch_cleanup', 'expired', 'reconciled']) cause!: string;
  @IsInt() @Ms() at_ms!: number;
}

export class CaptureCancelledDto {
  @IsIn(['cancel_captured_before_dispatch']) kind!: string;
  @IsString() @Id() hold_id!: string;
  @IsIn(['payment_declined', 'payment_released', 'not_dispatched', 'reconciled']) cause!: string;
  @IsInt() @Ms() at_ms!: number;
}

export class ExposureReleasedDto {
  @IsIn(['release_exposure']) kind!: string;
  @IsString() @Id() hold_id!: string;
  @IsInt() @Ms() at_ms!: number;
}

export class SpendSettledDto {
  @IsIn(['reconcile_spend', 'capture_spend']) kind!: string;
  @IsString() @Id() hold_id!: string;
  @IsMoney() actual_units!: number | string;
  @IsMoney() realized_units!: number | string;
  @IsMoney() overrun_units!: number | string;
  /** Absent on events from before ADR 0043. */
  @IsOptional() @IsMoney() hold_overrun_units?: number | string;
  @IsInt() @Ms() at_ms!: number;
  @IsOptional() @IsInt() @Min(0) @CountMax() tokens_used?: number;
  /** Set when the sweep realized the hold in full because no settlement came (ADR 0047). */
  @IsOptional() @IsIn(['unsettled_expired']) cause?: string;
}

/** The late correction of a hold the sweep realized in full (ADR 0047). */
export class SpendCorrectedDto {
  @IsIn(['correct_spend']) kind!: string;
  @IsString() @Id() hold_id!: string;
  @IsIn(['completed', 'failed_after_dispatch', 'elicitation_required', 'not_dispatched']) outcome!: string;
  @IsOptional() @IsMoney() actual_units?: number | string;
  @IsMoney() previous_realized_units!: number | string;
  @IsMoney() realized_units!: number | string;
  @IsMoney() hold_overrun_units!: number | string;
  @IsInt() @Min(-1) @Max(0) invocation_delta!: number;
  @IsInt() @Ms() at_ms!: number;
}

export class HoldRetainedDto {
  @IsString() @Id() hold_id!: string;
  @IsIn(['cancellation', 'deadline', 'incomplete', 'generic', 'tool_not_registered']) failure!: string;
  @IsInt() @Ms() at_ms!: number;
}

export class HoldStepDto {
  @IsString() @Id() hold_id!: string;
  @IsInt() @Ms() at_ms!: number;
}

export class LeaseReservedDto extends HoldStepDto {
  @IsString() @Id() lease_id!: string;
}

export class LeaseReleasedDto extends LeaseReservedDto {
  @IsIn(['released', 'failed']) outcome!: string;
}

export class PaymentStepRecordedDto extends HoldStepDto {
  @IsIn([
    'authorized',
    'declined',
    'insufficient_funds',
    'ambiguous',
    'captured',
    'capture_failed',
    'released',
    'release_pending',
    'release_failed',
    'refunded',
  ])
  step!: string;
  @IsString() @Id() reference!: string;
  @IsOptional() @IsString() authorization_id?: string;
  @IsOptional() @IsString() rail_reference?: string;
  @IsOptional() @IsIn(['reversible_hold', 'prepaid_final']) mode?: string;
  @IsOptional() @IsMoney() amount_units?: number | string;
  @IsOptional() @IsString() currency?: string;
}

export class NonceConsumedDto {
  @IsString() @Id() nonce_id!: string;
  @ValidateNested() @Type(() => NonceBindingDto) binding!: NonceBindingDto;
  @IsInt() @Ms() expires_at_ms!: number;
  @IsInt() @Ms() at_ms!: number;
}

export class NonceIssuedDto extends NonceConsumedDto {
  @IsString() @Id() hold_id!: string;
}

export class AmbiguityRecordedDto extends HoldStepDto {
  @IsString() @Id() ambiguity_id!: string;
  @IsIn([
    'invocation_capture',
    'cancellation',
    'reverse',
    'payment_authorization',
    'payment_release',
    'payment_capture',
    'settlement_missing',
  ])
  kind!: string;
  @IsOptional() @IsString() event_id?: string;
  @IsOptional() @IsBoolean() event_in_stream?: boolean;
  @IsOptional() @IsString() reference?: string;
}

export class AmbiguityResolvedDto {
  @IsString() @Id() ambiguity_id!: string;
  @IsString() @Id() resolution!: string;
  @IsOptional() @IsString() rail_state?: string;
  @IsInt() @Ms() at_ms!: number;
}

export class ReceiptRecordedDto {
  @IsString() @Id() receipt_id!: string;
  @IsString() @Id() command_id!: string;
  @IsOptional() @IsString() request_id?: string;
  @IsOptional() @IsString() hold_id?: string;
  @IsObject() receipt!: Record<string, unknown>;
  @IsString() signature!: string;
  @IsString() key_id!: string;
  @IsOptional() @IsObject() decision?: Record<string, unknown>;
  @IsInt() @Ms() at_ms!: number;
}
