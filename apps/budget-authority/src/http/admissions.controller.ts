// POST /v1/admissions and POST /v1/settlements: the HTTP twins of the Admit and Settle
// commands. Each call is a new command unless the caller sends an Idempotency-Key, so a
// second Admit with an already admitted request id is a replay and is denied (B7).
import { Body, Controller, Headers, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { AdmissionProofDto, AdmitCommandDto, IsMoney, SettleCommandDto, type WireMoney } from '@tally/contracts';
import {
  AdmissionOutstanding,
  CURRENCY_MISMATCH,
  currencyRefusalOf,
  HOLD_UNKNOWN,
  type AdmissionProof,
  type HoldAuthorization,
  type SignedReceipt,
} from '@tally/budget-application';
import type { PublishedKeys } from '@tally/directory-service';
import { Access, Caller, hasRole, possessionRefused, SubjectSigned, type Principal } from '@tally/platform-auth';
import { ProblemException } from '@tally/platform-app';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Length, Matches, Max, Min, ValidateNested } from 'class-validator';
import { AUTHORITY_PORT, type AuthorityPort } from '../authority.port.js';
import { decisionToWire, toAdmitCommand, toIncreaseCommand, toSettleCommand, wireJson } from '../command-mapping.js';
import { freshCommandId, notFound } from './http-support.js';
import { Idempotency, type IdempotentCall } from './idempotency.js';

export const PUBLISHED_KEYS = Symbol('PUBLISHED_KEYS');

/** An Admit whose capture stands without an answer yet (ADR 0058): the same key's retry finishes it. */
function notAnsweredYet(error: unknown): never {
  if (error instanceof AdmissionOutstanding)
    throw new ProblemException(
      503,
      'unavailable',
      'The admission is not answered yet; retry with the same Idempotency-Key to finish it',
    );
  throw error;
}

export class RedeemNonceDto {
  @IsString() @Length(1, 16_384) execution_nonce!: string;
}

/** POST /v1/holds/{id}/increase: the hold comes from the path. */
export class IncreaseBodyDto {
  @IsMoney() amount_units!: WireMoney;
  /** The currency of amount_units; one that is not the hold's is refused with 422 currency_mismatch. */
  @IsOptional() @Matches(/^[A-Z]{3}$/) currency?: string;
  @IsOptional() @IsInt() @Min(0) @Max(1_000_000_000) tokens?: number;
  @IsOptional() @ValidateNested() @Type(() => AdmissionProofDto) admission_proof?: AdmissionProofDto;
}

@Controller('v1')
export class AdmissionsController {
  constructor(
    @Inject(AUTHORITY_PORT) private readonly authority: AuthorityPort,
    @Inject(PUBLISHED_KEYS) private readonly keys: PublishedKeys,
    @Inject(Idempotency) private readonly idempotency: Idempotency,
  ) {}

  /**
   * The command id of a valid call: the one its Idempotency-Key recorded (ADR 0023), else a
   * fresh one. Asked only once the call passed validation, so a refused call never uses up a key.
   */
  private async commandIdOf(call: Omit<IdempotentCall, 'caller'>, caller: Principal): Promise<string> {
    return freshCommandId(undefined, await this.idempotency.commandId({ ...call, caller }));
  }

  @Post('admissions')
  @HttpCode(200)
  @Access('capability')
  @SubjectSigned()
  async admit(
    @Body() body: AdmitCommandDto,
    @Headers('idempotency-key') key: string | undefined,
    @Caller() caller: Principal,
  ) {
    const bearer = caller.kind === 'capability' ? caller.token : undefined;
    const mapped = toAdmitCommand(body, '', bearer);
    if (!mapped.ok) throw new ProblemException(400, 'validation', 'The request is invalid', mapped.errors);
    const call = { endpoint: 'POST /v1/admissions', key, request: body, proofScope: 'none' };
    const command = { ...mapped.command, command_id: await this.commandIdOf(call, caller) };
    return decisionToWire(await this.authority.admit(command).catch(notAnsweredYet));
  }

  @Post('settlements')
  @HttpCode(200)
  @Access('issuer', 'possession')
  async settle(
    @Body() body: SettleCommandDto,
    @Headers('idempotency-key') key: string | undefined,
    @Caller() caller: Principal,
  ) {
    const authorization = this.holdAuthorization(caller, body.hold_id, body.admission_proof);
    const mapped = toSettleCommand(body, '', authorization);
    if (!mapped.ok) throw new ProblemException(400, 'validation', 'The request is invalid', mapped.errors);
    const call = { endpoint: 'POST /v1/settlements', key, request: body, proofScope: `hold:${body.hold_id}` };
    const result = await this.authority.settle({ ...mapped.command, command_id: await this.commandIdOf(call, caller) });
    if (unknownToCaller(result.receipt)) throw notFound('hold', body.hold_id);
    refuseOtherCurrency(result.receipt);
    return wireJson({ receipt: result.receipt });
  }

  /** Raises an open hold within its grant, up to the configured number of increases; each has its own receipt. */
  @Post('holds/:id/increase')
  @HttpCode(200)
  @Access('issuer', 'possession')
  async increase(
    @Param('id') holdId: string,
    @Body() body: IncreaseBodyDto,
    @Headers('idempotency-key') key: string | undefined,
    @Caller() caller: Principal,
  ) {
    const authorization = this.holdAuthorization(caller, holdId, body.admission_proof);
    const request = { hold_id: holdId, ...body };
    const call = { endpoint: 'POST /v1/holds/{id}/increase', key, request, proofScope: `hold:${holdId}` };
    const command = toIncreaseCommand(request, await this.commandIdOf(call, caller), authorization);
    const result = await this.authority.increase(command);
    if (unknownToCaller(result.receipt)) throw notFound('hold', holdId);
    refuseOtherCurrency(result.receipt);
    return wireJson(result);
  }

  /** Additive: a tool server consumes a nonce it was handed; false when invalid, expired or already consumed. */
  @Post('nonces/redeem')
  @HttpCode(200)
  // The nonce is itself the proof: signed by the authority, single use, short lived.
  @Access('possession')
  async redeem(@Body() body: RedeemNonceDto) {
    return { redeemed: await this.authority.redeemNonce(body.execution_nonce) };
  }

  /**
   * Who asks to act on a hold (http-api.md, Credentials): the hold's admission proof, or an
   * issuer or admin (its tenant is checked against the hold by the authority). A proof that does not verify for this hold
   * is answered like an unknown hold at once, without a command; a reader may not settle;
   * no credential at all is a 401.
   */
  private holdAuthorization(
    caller: Principal,
    holdId: string,
    proof: AdmissionProofDto | undefined,
  ): HoldAuthorization {
    if (proof !== undefined) {
      if (!this.provesAdmission(proof, holdId)) throw notFound('hold', holdId);
      return { kind: 'admission_proof', proof: proof as unknown as AdmissionProof };
    }
    if (hasRole(caller, 'issuer'))
      return caller.role === 'admin' ? { kind: 'operator' } : { kind: 'operator', tenant_id: caller.tenant_id };
    // A capability token alone never settles over HTTP (http-api.md, Credentials): an agent
    // whose unit the orchestrator admitted holds the token but not the proof, and must not be
    // able to settle its own hold (at cost 0) before the orchestrator does. The orchestrator's
    // settlements over NATS carry the proof or the token it was admitted with.
    throw possessionRefused(caller, "an issuer key, or the hold's admission_proof,");
  }

  /** A proof the authority signed for exactly this hold. */
  private provesAdmission(proof: AdmissionProofDto, holdId: string): boolean {
    if (proof.claims['hold_id'] !== holdId) return false;
    return this.keys.verify(proof.claims, proof.signature, proof.key_id);
  }
}

/** A settlement or increase in another currency than its hold's booked nothing (ADR 0043): 422 naming the field. */
function refuseOtherCurrency(receipt: SignedReceipt): void {
  const refusal = currencyRefusalOf(receipt);
  if (refusal)
    throw new ProblemException(422, CURRENCY_MISMATCH, refusal.message, [
      { field: refusal.field, message: refusal.message },
    ]);
}

/** The authority's answer for a hold that is missing or not the caller's: the same 404 for both. */
function unknownToCaller(receipt: { verdict: string; reason?: string | null; capability_id?: string | null }): boolean {
  return receipt.verdict === 'deny' && receipt.reason === HOLD_UNKNOWN && (receipt.capability_id ?? null) === null;
}
