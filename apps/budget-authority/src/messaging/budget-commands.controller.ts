// The `budget` commands the orchestrator sends: admit and settle, over core NATS
// request/reply (ADR 0025) or the durable JetStream commands (ADR 0003). Validation
// failures are answered with the named fields and dead-lettered by the transport; a
// repeated command id gets the answer the tree recorded for it (its receipt), whichever
// replica it reaches, and a re-run after a crash finishes what the first run left.
import { Controller, Inject, UsePipes } from '@nestjs/common';
import { Ctx, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { AdmitCommandDto, IncreaseHoldDto, SettleCommandDto } from '@tally/contracts';
import { commandValidationPipe, refuseWhenFull, validationError, type CommandContext } from '@tally/platform-nest';
import {
  authorizationFromWire,
  CURRENCY_MISMATCH,
  currencyRefusalOf,
  type SignedReceipt,
} from '@tally/budget-application';
import { AUTHORITY_PORT, type AuthorityPort } from '../authority.port.js';
import { decisionToWire, toAdmitCommand, toIncreaseCommand, toSettleCommand, wireJson } from '../command-mapping.js';

@Controller()
export class BudgetCommandsController {
  constructor(@Inject(AUTHORITY_PORT) private readonly authority: AuthorityPort) {}

  @MessagePattern('admit')
  @UsePipes(commandValidationPipe())
  async admit(@Payload() body: AdmitCommandDto, @Ctx() ctx: CommandContext): Promise<Record<string, unknown>> {
    const mapped = toAdmitCommand(body, ctx.getCommandId());
    if (!mapped.ok) throw new RpcException(validationError(mapped.errors));
    return decisionToWire(await refuseWhenFull(() => this.authority.admit(mapped.command)));
  }

  @MessagePattern('settle')
  @UsePipes(commandValidationPipe())
  async settle(@Payload() body: SettleCommandDto, @Ctx() ctx: CommandContext): Promise<unknown> {
    // A command proves its right to the hold with what it carries; a refusal is answered as an unknown hold.
    const mapped = toSettleCommand(body, ctx.getCommandId(), authorizationFromWire(body));
    if (!mapped.ok) throw new RpcException(validationError(mapped.errors));
    const result = await refuseWhenFull(() => this.authority.settle(mapped.command));
    refuseOtherCurrency(result.receipt);
    return wireJson({ receipt: result.receipt });
  }

  /** <ns>.req.budget.increase: raise an open hold within its grant (spend policy). */
  @MessagePattern('increase')
  @UsePipes(commandValidationPipe())
  async increase(@Payload() body: IncreaseHoldDto, @Ctx() ctx: CommandContext): Promise<unknown> {
    const command = toIncreaseCommand(body, ctx.getCommandId(), authorizationFromWire(body));
    const result = await refuseWhenFull(() => this.authority.increase(command));
    refuseOtherCurrency(result.receipt);
    return wireJson(result);
  }
}

/**
 * A settlement or increase in another currency than its hold's booked nothing (ADR 0043): a
 * final refusal naming the field, as the HTTP twin's 422 does. A re-sent command id is
 * answered from the deny receipt its tree recorded, so it gets the same refusal.
 */
function refuseOtherCurrency(receipt: SignedReceipt): void {
  const refusal = currencyRefusalOf(receipt);
  if (refusal)
    throw new RpcException({
      type: CURRENCY_MISMATCH,
      message: refusal.message,
      errors: [{ field: refusal.field, message: refusal.message }],
    });
}
