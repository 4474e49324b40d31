// POST /v1/admissions and POST /v1/settlements: the HTTP twins of the Admit and Settle
// commands. Each call is a new command unless the caller sends an Idempotency-Key, so a
// second Admit with an already admitted request id is a replay and is denied (B7).
import { Body, Controller, Headers, HttpCode, Inject, Post } from '@nestjs/common';
import { AdmitCommandDto, SettleCommandDto } from '@tally/contracts';
import { ProblemException } from '@tally/platform-app';
import { IsString, Length } from 'class-validator';
import { AUTHORITY_PORT, type AuthorityPort } from '../authority.port.js';
import { decisionToWire, toAdmitCommand, toSettleCommand, wireJson } from '../command-mapping.js';
import { freshCommandId } from './http-support.js';

export class RedeemNonceDto {
  @IsString() @Length(1, 16_384) execution_nonce!: string;
}

@Controller('v1')
export class AdmissionsController {
  constructor(@Inject(AUTHORITY_PORT) private readonly authority: AuthorityPort) {}

  @Post('admissions')
  @HttpCode(200)
  async admit(@Body() body: AdmitCommandDto, @Headers('idempotency-key') key: string | undefined) {
    const mapped = toAdmitCommand(body, freshCommandId(key));
    if (!mapped.ok) throw new ProblemException(400, 'validation', 'The request is invalid', mapped.errors);
    return decisionToWire(await this.authority.admit(mapped.command));
  }

  @Post('settlements')
  @HttpCode(200)
  async settle(@Body() body: SettleCommandDto, @Headers('idempotency-key') key: string | undefined) {
    const mapped = toSettleCommand(body, freshCommandId(key));
    if (!mapped.ok) throw new ProblemException(400, 'validation', 'The request is invalid', mapped.errors);
    const result = await this.authority.settle(mapped.command);
    return wireJson({ receipt: result.receipt });
  }

  /** Additive: a tool server consumes a nonce it was handed; false when invalid, expired or already consumed. */
  @Post('nonces/redeem')
  @HttpCode(200)
  async redeem(@Body() body: RedeemNonceDto) {
    return { redeemed: await this.authority.redeemNonce(body.execution_nonce) };
  }
}
