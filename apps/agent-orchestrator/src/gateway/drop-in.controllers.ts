// The drop-in endpoints (http-api.md, "Drop-in endpoints for existing agents"): OpenAI Chat
// Completions, Anthropic Messages and the model list. The capability token is the API key
// (Authorization: Bearer, or x-api-key as Anthropic's SDK sends it); errors are the dialect's.
import { Body, Controller, Get, Headers, Inject, Post, Res, UseFilters } from '@nestjs/common';
import {
  anthropicRequestIn,
  isObject,
  openAiIncludeUsage,
  openAiRequestIn,
  type NeutralRequest,
  type Translated,
} from '@tally/orchestrator-dialects';
import { Access, Caller, SubjectSigned, type Principal } from '@tally/platform-auth';
import type { Response } from './express-response.js';
import { anthropicWriter, openAiWriter, type DialectWriter } from './dialect-writer.js';
import { DialectExceptionFilter } from './dialect-exception.filter.js';
import { DropInGateway, type DropInCall } from './drop-in-gateway.js';
import { httpExchange } from './http-exchange.js';
import { ModelCatalog } from './model-catalog.js';
import { RejectedDropIn } from './rejected-drop-in.js';

type HeaderBag = Record<string, string | undefined>;

async function serve(
  gateway: DropInGateway,
  rejected: RejectedDropIn,
  entrypoint: DropInCall['entrypoint'],
  body: unknown,
  translated: Translated<NeutralRequest>,
  writer: DialectWriter,
  caller: Principal,
  headers: HeaderBag,
  res: Response,
): Promise<void> {
  if (caller.kind !== 'capability') throw new Error('the access guard admits only capability tokens here');
  const http = httpExchange(res);
  if (!translated.ok) {
    await rejected.record(entrypoint, translated.field, translated.message, body);
    return http.error(writer.error({ kind: 'invalid_request', field: translated.field, message: translated.message }));
  }
  const call: DropInCall = {
    entrypoint,
    request: translated.value,
    writer,
    caller: { token: caller.token, tenant_id: caller.tenant_id, capability_id: caller.capability_id },
    ...(headers['idempotency-key'] === undefined ? {} : { idempotencyKey: headers['idempotency-key'] }),
    ...(headers['x-tally-session-id'] === undefined ? {} : { sessionId: headers['x-tally-session-id'] }),
    ...(headers['x-tally-fallbacks'] === undefined ? {} : { fallbacks: headers['x-tally-fallbacks'] }),
  };
  await gateway.handle(call, http);
}

@Controller('v1')
@UseFilters(new DialectExceptionFilter(openAiWriter(false)))
export class ChatCompletionsController {
  constructor(
    @Inject(DropInGateway) private readonly gateway: DropInGateway,
    @Inject(RejectedDropIn) private readonly rejected: RejectedDropIn,
    @Inject(ModelCatalog) private readonly catalog: ModelCatalog,
  ) {}

  @Post('chat/completions')
  @Access('capability')
  @SubjectSigned()
  async complete(
    @Body() body: unknown,
    @Caller() caller: Principal,
    @Headers() headers: HeaderBag,
    @Res() res: Response,
  ): Promise<void> {
    const writer = openAiWriter(isObject(body) && openAiIncludeUsage(body));
    const translated = openAiRequestIn(body);
    await serve(this.gateway, this.rejected, 'chat_completions', body, translated, writer, caller, headers, res);
  }

  @Get('models')
  @Access('capability', 'reader')
  models(): ReturnType<ModelCatalog['list']> {
    return this.catalog.list();
  }
}

@Controller('v1')
@UseFilters(new DialectExceptionFilter(anthropicWriter))
export class MessagesController {
  constructor(
    @Inject(DropInGateway) private readonly gateway: DropInGateway,
    @Inject(RejectedDropIn) private readonly rejected: RejectedDropIn,
  ) {}

  @Post('messages')
  @Access('capability')
  @SubjectSigned()
  async message(
    @Body() body: unknown,
    @Caller() caller: Principal,
    @Headers() headers: HeaderBag,
    @Res() res: Response,
  ): Promise<void> {
    const translated = anthropicRequestIn(body);
    await serve(this.gateway, this.rejected, 'messages', body, translated, anthropicWriter, caller, headers, res);
  }
}
