// Wire DTOs of the agent-orchestrator: the POST /v1/work body, which is also the
// payload of the programmatic submission subject.
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';

export const PURPOSES = ['plan', 'execute', 'summarize', 'verify', 'voice_synthesis'] as const;
export type Purpose = (typeof PURPOSES)[number];

/** Ids become NATS subject tokens, so they are restricted to a safe alphabet. */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

export class RouteLegDto {
  @IsString() @Length(1, 64) provider!: string;
  @IsString() @Length(1, 128) model!: string;
}

export class MessageDto {
  @IsIn(['system', 'user', 'assistant']) role!: 'system' | 'user' | 'assistant';
  @IsString() @Length(0, 1_000_000) content!: string;
}

export class WorkLimitsDto {
  @IsOptional() @IsInt() @Min(0) @Max(20) max_retries?: number;
  @IsOptional() @IsInt() @Min(0) @Max(20) run_retry_attempts?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000) dispatch_ceiling?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000) max_tokens?: number;
  @IsOptional() @IsInt() @Min(100) @Max(3_600_000) timeout_ms?: number;
}

export class SubmitWorkDto {
  @IsOptional()
  @Matches(ID_PATTERN, { message: 'work_id must be 1-64 characters of A-Z a-z 0-9 _ -' })
  work_id?: string;
  @IsOptional()
  @Matches(ID_PATTERN, { message: 'session_id must be 1-64 characters of A-Z a-z 0-9 _ -' })
  session_id?: string;
  @IsIn(PURPOSES as unknown as string[]) purpose!: Purpose;
  /** Required on the submission subject; over HTTP the capability token may come as a bearer instead. */
  @IsOptional() @IsString() @Length(1, 16_384) token?: string;
  @ArrayMinSize(1) @ArrayMaxSize(8) @ValidateNested({ each: true }) @Type(() => RouteLegDto) route!: RouteLegDto[];
  @ArrayMinSize(1) @ArrayMaxSize(1_000) @ValidateNested({ each: true }) @Type(() => MessageDto) messages!: MessageDto[];
  @IsOptional() @ValidateNested() @Type(() => WorkLimitsDto) limits?: WorkLimitsDto;
}

export type WorkStatus = 'queued' | 'running' | 'completed' | 'failed' | 'aborted';
