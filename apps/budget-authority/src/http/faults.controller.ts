// POST /v1/test/faults: test-only fault injection inside a running authority (see
// docs/adr/0006-fault-injection.md). Registered only when fault injection is on, which
// boot allows only with the simulated rail. It steers the simulated rail, the
// lost-acknowledgement decorator and the admission hook, and reports their counters.
import { BadRequestException, Body, Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { HOST_CONTEXT, type HostContext } from '@tally/platform-app';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import { Access } from '@tally/platform-auth';
import { FAULT_TARGETS, type FaultTargets } from '../runtime/fault-targets.js';

const AUTHORIZE = [
  'approve',
  'decline',
  'insufficient_funds',
  'unavailable',
  'rail_error',
  'rail_error_after_commit',
  'block_until_released',
] as const;
const RELEASE = ['release', 'pending', 'fail', 'rail_error'] as const;
const CAPTURE = ['settle', 'fail', 'rail_error'] as const;

export class RailFaultsDto {
  @IsOptional() @IsIn(AUTHORIZE as unknown as string[]) authorize?: (typeof AUTHORIZE)[number];
  @IsOptional() @IsIn(RELEASE as unknown as string[]) release?: (typeof RELEASE)[number];
  @IsOptional() @IsIn(CAPTURE as unknown as string[]) capture?: (typeof CAPTURE)[number];
}

export class LostAcksDto {
  @IsArray() @ArrayMaxSize(3) @IsIn(['capture', 'cancellation', 'reverse'], { each: true }) kinds!: (
    'capture' | 'cancellation' | 'reverse'
  )[];
  @IsInt() @Min(0) @Max(1_000) losses_max!: number;
}

export class HookFaultsDto {
  @IsOptional() @IsBoolean() lease?: boolean;
  @IsOptional() @IsIn(['release', 'fail']) release?: 'release' | 'fail';
  @IsOptional() @IsBoolean() block?: boolean;
}

export class FaultsDto {
  /** Clears every fault and counter first. */
  @IsOptional() @IsBoolean() reset?: boolean;
  @IsOptional() @ValidateNested() @Type(() => RailFaultsDto) rail?: RailFaultsDto;
  /** Per rail reference (request id): behaviour that overrides `rail` for that reference. */
  @IsOptional() @IsObject() references?: Record<string, RailFaultsDto>;
  @IsOptional() @ValidateNested() @Type(() => LostAcksDto) lost_acks?: LostAcksDto;
  @IsOptional() @ValidateNested() @Type(() => HookFaultsDto) hook?: HookFaultsDto;
  @IsOptional() @IsBoolean() release_blocked_authorizations?: boolean;
  /** Ends the projection worker thread abruptly (mid-batch if one is committing); the service restarts it. */
  @IsOptional() @IsBoolean() kill_projection_thread?: boolean;
}

@Controller('v1/test')
export class FaultsController {
  constructor(
    @Inject(FAULT_TARGETS) private readonly targets: FaultTargets,
    @Inject(HOST_CONTEXT) private readonly ctx: HostContext,
  ) {}

  @Post('faults')
  @HttpCode(200)
  @Access('admin')
  async configure(@Body() body: FaultsDto) {
    const t = this.targets;
    if (body.kill_projection_thread) {
      if (!this.ctx.projections.kill)
        throw new BadRequestException(
          'kill_projection_thread: projections run on the main thread here (projections.worker_thread=false)',
        );
      await this.ctx.projections.kill();
    }
    if (body.reset) t.reset();
    if (body.rail) t.rail.configure(body.rail);
    for (const [reference, behaviour] of Object.entries(body.references ?? {}))
      t.rail.configureReference(reference, behaviour);
    if (body.lost_acks) t.store.loseAcks({ kinds: body.lost_acks.kinds, lossesMax: body.lost_acks.losses_max });
    if (body.hook) t.hook.configure(body.hook);
    if (body.release_blocked_authorizations) t.rail.releaseBlockedAuthorizations();
    return t.report();
  }
}
