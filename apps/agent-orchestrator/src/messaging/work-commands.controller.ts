// Programmatic submission over JetStream (`<ns>.cmd.work.submit`, ADR 0003): the same
// semantics as POST /v1/work. Without a work_id the id derives from the command id, so a
// re-sent command submits the same unit.
import { Controller, Inject, UsePipes } from '@nestjs/common';
import { Ctx, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { SubmitWorkDto } from '@tally/contracts';
import { commandValidationPipe, refuseWhenFull, type JetStreamCommandContext } from '@tally/platform-nest';
import { createHash } from 'node:crypto';
import { fieldErrorsOf } from '../http/rejections.js';
import { WorkSubmission } from '../work/work-submission.js';

export function workIdFromCommandId(commandId: string): string {
  return `cmd-${createHash('sha256').update(commandId).digest('base64url').slice(0, 40)}`;
}

@Controller()
export class WorkCommandsController {
  constructor(@Inject(WorkSubmission) private readonly submission: WorkSubmission) {}

  @MessagePattern('submit')
  @UsePipes(commandValidationPipe())
  async submit(
    @Payload() body: SubmitWorkDto,
    @Ctx() ctx: JetStreamCommandContext,
  ): Promise<{ work_id: string; status: 'queued' }> {
    const workId = body.work_id ?? workIdFromCommandId(ctx.getCommandId());
    const outcome = await refuseWhenFull(() => this.submission.submit(body, workId));
    if (outcome.ok) return { work_id: outcome.work_id, status: outcome.status };
    const { rejection } = outcome;
    if (rejection.code === 'invalid_work')
      throw new RpcException({
        type: 'validation',
        message: 'command payload is invalid',
        errors: fieldErrorsOf(rejection),
      });
    throw new RpcException({
      type: 'rejected',
      reason: rejection.code,
      message: rejection.message,
      detail: { work_id: workId },
    });
  }
}
