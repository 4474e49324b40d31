// The durable `budget` commands the orchestrator sends over JetStream: admit and settle.
// Validation failures are answered with the named fields and dead-lettered by the
// transport; a repeated command id is answered from the transport's reply cache, and a
// re-run after a crash gets the same answer from the receipt the tree recorded for it.
import { Controller, Inject, UsePipes } from '@nestjs/common';
import { Ctx, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { AdmitCommandDto, SettleCommandDto } from '@tally/contracts';
import {
  commandValidationPipe,
  refuseWhenFull,
  validationError,
  type JetStreamCommandContext,
} from '@tally/platform-nest';
import { AUTHORITY_PORT, type AuthorityPort } from '../authority.port.js';
import { decisionToWire, toAdmitCommand, toSettleCommand, wireJson } from '../command-mapping.js';

@Controller()
export class BudgetCommandsController {
  constructor(@Inject(AUTHORITY_PORT) private readonly authority: AuthorityPort) {}

  @MessagePattern('admit')
  @UsePipes(commandValidationPipe())
  async admit(@Payload() body: AdmitCommandDto, @Ctx() ctx: JetStreamCommandContext): Promise<Record<string, unknown>> {
    const mapped = toAdmitCommand(body, ctx.getCommandId());
    if (!mapped.ok) throw new RpcException(validationError(mapped.errors));
    return decisionToWire(await refuseWhenFull(() => this.authority.admit(mapped.command)));
  }

  @MessagePattern('settle')
  @UsePipes(commandValidationPipe())
  async settle(@Payload() body: SettleCommandDto, @Ctx() ctx: JetStreamCommandContext): Promise<unknown> {
    const mapped = toSettleCommand(body, ctx.getCommandId());
    if (!mapped.ok) throw new RpcException(validationError(mapped.errors));
    const result = await refuseWhenFull(() => this.authority.settle(mapped.command));
    return wireJson({ receipt: result.receipt });
  }
}
