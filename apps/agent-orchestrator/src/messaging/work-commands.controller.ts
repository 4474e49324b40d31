// Programmatic submission over JetStream (`<ns>.cmd.work.submit`, ADR 0003): the same
// semantics as POST /v1/work. Without a work_id the id derives from the command id, so a
// re-sent command submits the same unit.
import { Controller, Inject, UsePipes } from '@nestjs/common';
import { Ctx, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { SubmitWorkDto } from '@tally/contracts';
import { commandValidationPipe, refuseWhenFull, type JetStreamCommandContext } from '@tally/platform-nest';
import { createHash } from 'node:crypto';
import { fieldErrorsOf } from '../http/rejections.js';
import type { CapabilityTokenVerifier } from '@tally/directory-service';
import { isRefusal } from '@tally/platform-auth';
import { CAPABILITY_TOKENS } from '../http/work-scope.js';
import { WorkSubmission, type WorkOwner } from '../work/work-submission.js';

export function workIdFromCommandId(commandId: string): string {
  return `cmd-${createHash('sha256').update(commandId).digest('base64url').slice(0, 40)}`;
}

@Controller()
export class WorkCommandsController {
  constructor(
    @Inject(WorkSubmission) private readonly submission: WorkSubmission,
    @Inject(CAPABILITY_TOKENS) private readonly tokens: CapabilityTokenVerifier,
  ) {}

  /** The body's token, verified like a bearer: its tenant owns the unit; a bad one is refused. */
  private async ownerOf(token: string | undefined): Promise<WorkOwner | undefined> {
    if (token === undefined) return undefined;
    const principal = await this.tokens.verify(token);
    if (isRefusal(principal))
      throw new RpcException({ type: 'rejected', reason: 'unauthorized', message: principal.message });
    return { token, tenant_id: principal.tenant_id };
  }

  @MessagePattern('submit')
  @UsePipes(commandValidationPipe())
  async submit(
    @Payload() body: SubmitWorkDto,
    @Ctx() ctx: JetStreamCommandContext,
  ): Promise<{ work_id: string; status: 'queued' }> {
    const workId = body.work_id ?? workIdFromCommandId(ctx.getCommandId());
    const owner = await this.ownerOf(body.token);
    const outcome = await refuseWhenFull(() => this.submission.submit(body, workId, owner));
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
