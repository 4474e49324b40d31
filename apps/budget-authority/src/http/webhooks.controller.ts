// Tenant webhooks (http-api.md, Spend policy): an admin or an issuer of the tenant registers
// an endpoint and sees its signing secret once, in the answer; the tenant's keys list the
// endpoints (never a secret), each delivery attempt, and the messages given up on. A URL whose
// host is, or resolves to, an internal address is refused with 422 naming `url` (ADR 0053).
import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import type { DirectoryView } from '@tally/directory-service';
import { ProblemException } from '@tally/platform-app';
import { Access, actsIn, Caller, type Principal } from '@tally/platform-auth';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, IsIn, IsString, MaxLength } from 'class-validator';
import {
  coarseDeliveryError,
  WEBHOOK_EVENT_TYPES,
  urlRefusal,
  type WebhookEventType,
} from '../webhooks/webhook-policy.js';
import { TARGET_REFUSED_MESSAGE } from '../webhooks/webhook-targets.js';
import type { WebhookEndpoint } from '../webhooks/webhook-endpoints.js';
import type { WebhooksRuntime } from '../webhooks/webhooks-runtime.js';
import type { HeaderSink } from './http-support.js';
import { DIRECTORY_VIEW, tenantAsWritten } from './tenants.controller.js';

export const WEBHOOKS_RUNTIME = Symbol('WEBHOOKS_RUNTIME');

const LIST_LIMIT_MAX = 1_000;

export class RegisterWebhookDto {
  @IsString() @MaxLength(2_048) url!: string;
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(WEBHOOK_EVENT_TYPES.length)
  @ArrayUnique()
  @IsIn(WEBHOOK_EVENT_TYPES, { each: true, message: `each of events must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}` })
  events!: WebhookEventType[];
}

function endpointToWire(e: WebhookEndpoint) {
  return { id: e.endpoint_id, url: e.url, events: e.events, created_at: new Date(e.registered_at_ms).toISOString() };
}

function limitOf(raw: string | undefined): number {
  if (raw === undefined) return 100;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > LIST_LIMIT_MAX)
    throw new ProblemException(400, 'validation', 'The request is invalid', [
      { field: 'limit', message: `limit must be an integer from 1 to ${LIST_LIMIT_MAX}` },
    ]);
  return n;
}

@Controller('v1/tenants')
export class WebhooksController {
  constructor(
    @Inject(WEBHOOKS_RUNTIME) private readonly webhooks: WebhooksRuntime,
    @Inject(DIRECTORY_VIEW) private readonly view: DirectoryView,
  ) {}

  @Post(':id/webhooks')
  @HttpCode(201)
  @Access('issuer')
  async register(
    @Param('id') id: string,
    @Body() body: RegisterWebhookDto,
    @Caller() caller: Principal,
    @Res({ passthrough: true }) res: HeaderSink,
  ) {
    await this.tenantFor(caller, 'issuer', id, res);
    const refusal = urlRefusal(body.url, this.webhooks.urlPolicy);
    if (refusal)
      throw new ProblemException(400, 'validation', 'The request is invalid', [{ field: 'url', message: refusal }]);
    // A name that does not resolve now is accepted: nothing is called until a delivery, which checks again.
    const target = await this.webhooks.checkTarget(new URL(body.url));
    if (!target.ok && target.code === 'refused_target')
      throw new ProblemException(422, 'webhook_target_refused', 'The webhook target is refused', [
        { field: 'url', message: TARGET_REFUSED_MESSAGE },
      ]);
    const out = await this.webhooks.endpoints.register(id, body.url, body.events);
    if (!out.ok) throw new ProblemException(409, out.rejection.code, out.rejection.message);
    return { ...endpointToWire(out.endpoint), secret: out.secret };
  }

  /** Additive: the tenant's endpoints, without their secrets. */
  @Get(':id/webhooks')
  @Access('reader')
  async list(@Param('id') id: string, @Caller() caller: Principal, @Res({ passthrough: true }) res: HeaderSink) {
    await this.tenantFor(caller, 'reader', id, res);
    return { webhooks: (await this.webhooks.endpoints.list(id)).map(endpointToWire) };
  }

  /** Additive: deliveries stop; messages already in the outbox are dead-lettered as endpoint_deleted. */
  @Delete(':id/webhooks/:webhookId')
  @HttpCode(204)
  @Access('issuer')
  async remove(
    @Param('id') id: string,
    @Param('webhookId') webhookId: string,
    @Caller() caller: Principal,
    @Res({ passthrough: true }) res: HeaderSink,
  ) {
    await this.tenantFor(caller, 'issuer', id, res);
    const out = await this.webhooks.endpoints.remove(id, webhookId);
    if (!out.ok) throw new ProblemException(404, 'not_found', out.rejection.message);
  }

  /** Additive: every delivery attempt, newest last; `webhook_id` narrows to one message. */
  @Get(':id/webhooks/attempts')
  @Access('reader')
  async attempts(
    @Param('id') id: string,
    @Caller() caller: Principal,
    @Res({ passthrough: true }) res: HeaderSink,
    @Query('webhook_id') webhookId?: string,
    @Query('limit') limit?: string,
  ) {
    await this.tenantFor(caller, 'reader', id, res);
    const n = limitOf(limit);
    const all = await this.webhooks.log(this.webhooks.names.attemptsSubject(id));
    const picked = webhookId === undefined ? all : all.filter((a) => a['webhook_id'] === webhookId);
    return { attempts: picked.slice(-n).map(withTimes) };
  }

  /** Additive: the messages given up on, with why, newest last. */
  @Get(':id/webhooks/dead-letters')
  @Access('reader')
  async deadLetters(
    @Param('id') id: string,
    @Caller() caller: Principal,
    @Res({ passthrough: true }) res: HeaderSink,
    @Query('limit') limit?: string,
  ) {
    await this.tenantFor(caller, 'reader', id, res);
    const all = await this.webhooks.log(this.webhooks.names.deadSubject(id));
    return { dead_letters: all.slice(-limitOf(limit)).map(withTimes) };
  }

  /** Another tenant's webhooks are a 404, as if the tenant did not exist; a tenant just created through any replica is known. */
  private async tenantFor(caller: Principal, role: 'issuer' | 'reader', id: string, res: HeaderSink): Promise<void> {
    const known =
      actsIn(caller, role, id) && (id === 'default' || (await tenantAsWritten(this.view, id, res)) !== undefined);
    if (!known) throw new ProblemException(404, 'not_found', `tenant ${id} is unknown`);
  }
}

/** A record as a reader sees it: ISO times, and a failure only as its coarse code (ADR 0053), whenever it was recorded. */
function withTimes(record: Record<string, unknown>): Record<string, unknown> {
  const { at_ms, message_at_ms, error, last_error, ...rest } = record;
  return {
    ...rest,
    ...(typeof error === 'string' ? { error: coarseDeliveryError(error) } : {}),
    ...(typeof last_error === 'string' ? { last_error: coarseDeliveryError(last_error) } : {}),
    at: new Date(Number(at_ms)).toISOString(),
    ...(message_at_ms === undefined ? {} : { message_at: new Date(Number(message_at_ms)).toISOString() }),
  };
}
