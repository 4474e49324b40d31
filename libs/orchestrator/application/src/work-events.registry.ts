// Wire validation for work-unit events: one DTO per event type, registered with the
// envelope registry the JetStream event store decodes with. The DTOs mirror the domain
// event types field by field; unknown fields are refused by the registry.
import { COUNT_MAX, EventRegistry } from '@tally/contracts';
import {
  ATTEMPT_REASONS,
  FAILURE_CODES,
  ENTRYPOINTS,
  FAILURE_DOMAINS,
  HOLD_OUTCOMES,
  PURPOSES,
  SETTLEMENTS,
} from '@tally/orchestrator-domain';
import { Type } from 'class-transformer';
import { tokenFingerprint } from './credential.js';
import {
  IsArray,
  IsIn,
  IsInt,
  IsISO8601,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';

/**
 * Hold and settled costs, as decimal strings. Wider than an amount (2^63-1 has 19 digits) on
 * purpose: units recorded before ADR 0044 may carry a hold the authority then accepted, and
 * they must still decode; new ones come from the authority's bounded answers and a checked price.
 */
const DECIMAL = /^(0|[1-9][0-9]{0,30})$/;

class RouteLegDto {
  @IsString() @Length(1, 128) provider!: string;
  @IsString() @Length(1, 256) model!: string;
}

class ChatMessageDto {
  @IsString() @Length(1, 64) role!: string;
  @IsString() content!: string;
  /** Neutral content parts (tool calls, tool results, images), carried as they were translated. */
  @IsOptional() @IsArray() @IsObject({ each: true }) parts?: Record<string, unknown>[];
}

class LimitsDto {
  @IsInt() @Min(0) @Max(COUNT_MAX) max_retries!: number;
  @IsInt() @Min(0) @Max(COUNT_MAX) run_retry_attempts!: number;
  @IsInt() @Min(1) @Max(COUNT_MAX) dispatch_ceiling!: number;
  @IsInt() @Min(1) @Max(COUNT_MAX) max_tokens!: number;
  @IsInt() @Min(1) timeout_ms!: number;
  @IsInt() @Min(0) retry_base_backoff_ms!: number;
  @IsInt() @Min(0) run_retry_base_backoff_ms!: number;
  @IsInt() @Min(0) max_backoff_ms!: number;
  @IsInt() @Min(0) max_retry_after_ms!: number;
}

class PriceDto {
  @IsInt() @Min(0) @Max(COUNT_MAX) input_per_mtok_units!: number;
  @IsInt() @Min(0) @Max(COUNT_MAX) output_per_mtok_units!: number;
  @IsString() @Length(1, 16) currency!: string;
  @IsOptional() @IsInt() @Min(0) @Max(COUNT_MAX) per_call_units?: number;
}

class UsageDto {
  @IsInt() @Min(0) @Max(COUNT_MAX) input_tokens!: number;
  @IsInt() @Min(0) @Max(COUNT_MAX) output_tokens!: number;
}

class Base {
  @IsString() @Length(1, 64) work_id!: string;
  @IsISO8601({ strict: true }) at!: string;
}

export class WorkSubmittedDto extends Base {
  @IsString() @Length(1, 256) session_id!: string;
  @IsIn(PURPOSES) purpose!: string;
  /** sha256 of the capability token, base64url; the token itself never enters the ledger (ADR 0007). */
  @IsString() @Length(1, 128) token_fingerprint!: string;
  @IsOptional() @Matches(/^[a-z0-9][a-z0-9_-]{0,62}$/) tenant_id?: string;
  @IsArray() @ValidateNested({ each: true }) @Type(() => RouteLegDto) route!: RouteLegDto[];
  @IsArray() @ValidateNested({ each: true }) @Type(() => ChatMessageDto) messages!: ChatMessageDto[];
  @ValidateNested() @Type(() => LimitsDto) limits!: LimitsDto;
  @IsIn(ENTRYPOINTS) entrypoint!: string;
  @IsOptional() @IsObject() options?: Record<string, unknown>;
}

export class AbortRequestedDto extends Base {
  @IsString() reason!: string;
}

export class AttemptStartedDto extends Base {
  @IsInt() @Min(0) ordinal!: number;
  @IsIn(ATTEMPT_REASONS) reason!: string;
  @IsInt() @Min(0) leg_index!: number;
  @IsString() @Length(1, 128) provider!: string;
  @IsString() @Length(1, 256) model!: string;
  @IsInt() @Min(0) round!: number;
  @IsString() @Length(1, 512) hold_id!: string;
  @Matches(DECIMAL) hold_cost_units!: string;
  @ValidateNested() @Type(() => PriceDto) price!: PriceDto;
  @IsInt() @Min(0) backoff_ms!: number;
}

const HEX_SHA256 = /^[0-9a-f]{64}$/;

/** Optional on version 1 events: events from before ADR 0019 never carry it, and read as they did. */
export class OutputRefDto {
  @IsString() @Length(1, 256) stream!: string;
  @IsString() @Length(1, 512) subject!: string;
  @IsInt() @Min(0) bytes!: number;
  @Matches(HEX_SHA256) sha256!: string;
  @IsInt() @Min(1) chunks!: number;
  @IsInt() @Min(0) output_bytes!: number;
}

export class AttemptSettledDto extends Base {
  @IsInt() @Min(0) ordinal!: number;
  @IsIn(FAILURE_DOMAINS) domain!: string;
  @IsIn(SETTLEMENTS) settlement!: string;
  @IsInt() @Min(0) latency_ms!: number;
  @IsOptional() @ValidateNested() @Type(() => UsageDto) usage?: UsageDto;
  @IsOptional() @IsString() error?: string;
  @IsOptional() @IsString() output?: string;
  @IsOptional() @IsArray() @IsObject({ each: true }) output_parts?: Record<string, unknown>[];
  @IsOptional() @ValidateNested() @Type(() => OutputRefDto) output_ref?: OutputRefDto;
  @IsOptional() @IsString() @Length(1, 64) stop_reason?: string;
  @IsOptional() @IsString() partial_output?: string;
  @IsOptional() @IsInt() @Min(0) retry_after_ms?: number;
  @IsOptional() @IsInt() @Min(100) http_status?: number;
}

export class AttemptSettledUnknownDto extends Base {
  @IsInt() @Min(0) ordinal!: number;
  @IsInt() @Min(0) latency_ms!: number;
  @IsString() error!: string;
}

export class HoldSettledDto extends Base {
  @IsInt() @Min(0) ordinal!: number;
  @IsString() @Length(1, 512) hold_id!: string;
  @IsIn(HOLD_OUTCOMES) outcome!: string;
  @IsOptional() @Matches(DECIMAL) cost_units?: string;
}

export class WorkCompletedDto extends Base {
  @IsInt() @Min(0) winning_attempt!: number;
  @IsString() output!: string;
  @IsOptional() @IsArray() @IsObject({ each: true }) output_parts?: Record<string, unknown>[];
  @IsOptional() @ValidateNested() @Type(() => OutputRefDto) output_ref?: OutputRefDto;
  @IsOptional() @IsString() @Length(1, 64) stop_reason?: string;
}

export class WorkFailedDto extends Base {
  @IsIn(FAILURE_CODES) code!: string;
  @IsString() error!: string;
  @IsOptional() @IsString() @Length(1, 128) reason?: string;
  @IsOptional() @IsInt() @Min(0) retry_after_ms?: number;
}

export class WorkAbortedDto extends Base {
  @IsString() reason!: string;
  @IsOptional() @IsString() partial_output?: string;
}

/**
 * Version 1 recorded the capability token itself. Reading it yields the fingerprint only, so
 * nothing downstream (state, projections, replays) holds the credential; the v1 bytes stay in
 * the stream, which is why ADR 0007 asks operators to let those tokens expire or revoke them.
 */
export function upcastSubmittedV1(payload: Record<string, unknown>): Record<string, unknown> {
  const { token, ...rest } = payload;
  return { ...rest, token_fingerprint: tokenFingerprint(typeof token === 'string' ? token : '') };
}

/**
 * Version 3 records the API a unit came in by (`entrypoint`) and may carry content parts and
 * call options; every unit before it came in by the work API, with plain-text messages.
 */
export function upcastSubmittedV2(payload: Record<string, unknown>): Record<string, unknown> {
  return { ...payload, entrypoint: 'work' };
}

/** Every work-unit event type at its current schema version. */
export function workEventRegistry(): EventRegistry {
  return new EventRegistry([
    {
      type: 'WorkSubmitted',
      version: 3,
      payload: WorkSubmittedDto,
      upcasters: { 1: upcastSubmittedV1, 2: upcastSubmittedV2 },
    },
    { type: 'AbortRequested', version: 1, payload: AbortRequestedDto },
    { type: 'AttemptStarted', version: 1, payload: AttemptStartedDto },
    { type: 'AttemptSettled', version: 1, payload: AttemptSettledDto },
    { type: 'AttemptSettledUnknown', version: 1, payload: AttemptSettledUnknownDto },
    { type: 'HoldSettled', version: 1, payload: HoldSettledDto },
    { type: 'WorkCompleted', version: 1, payload: WorkCompletedDto },
    { type: 'WorkFailed', version: 1, payload: WorkFailedDto },
    { type: 'WorkAborted', version: 1, payload: WorkAbortedDto },
  ]);
}
