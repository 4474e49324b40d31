// What happens to one delivered command. The order is the guarantee:
//   reply cache hit → re-send the cached reply, ack, handler not run;
//   otherwise run the handler (which appends its events), store the reply in the
//   cache, publish it, and only then ack. A crash anywhere before the ack means a
//   redelivery, so handlers must be idempotent by command id (derive event ids from it).
// Bad input is answered field by field, dead-lettered and terminated; an unexpected
// failure is retried with bounded exponential backoff and dead-lettered at the limit.
import type { LoggerService } from '@nestjs/common';
import type { MessageHandler } from '@nestjs/microservices';
import type { JetStreamClient, JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/nats-core';
import { Headers, type FieldError } from '@tally/contracts';
import { publishDeadLetter, type DeadLetter } from '@tally/platform-jetstream';
import { lastValueFrom, type Observable } from 'rxjs';
import { JetStreamCommandContext } from './command-context.js';
import { backoffMs, deadLetterSourceFor, type JetStreamCommandServerOptions } from './options.js';
import type { ReplyCache } from './reply-cache.js';
import { isValidationRpcError } from './validation-pipe.js';
import { commandIdProblem, encodeReply, validationError, type CommandReply } from './wire.js';

export interface CommandProcessorDeps {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly cache: ReplyCache;
  readonly options: JetStreamCommandServerOptions;
  readonly logger: LoggerService;
  handlerFor(command: string): MessageHandler | null;
  toObservable(result: unknown): Observable<unknown>;
}

export type Outcome =
  | { readonly kind: 'answered'; readonly reply: CommandReply<unknown> }
  | {
      readonly kind: 'refused';
      readonly reason: DeadLetter['reason'];
      readonly detail: string;
      readonly errors: readonly FieldError[];
      readonly reply: CommandReply<unknown>;
    }
  | { readonly kind: 'retry'; readonly detail: string };

interface Delivery {
  readonly msg: JsMsg;
  readonly commandId: string;
  readonly replyTo: string | undefined;
  readonly traceparent: string | undefined;
}

export class CommandProcessor {
  constructor(private readonly deps: CommandProcessorDeps) {}

  async process(msg: JsMsg): Promise<void> {
    const header = (name: string) => msg.headers?.get(name) || undefined;
    const delivery: Delivery = {
      msg,
      commandId: header(Headers.commandId) ?? '',
      replyTo: header(Headers.replyTo),
      traceparent: header(Headers.traceparent),
    };
    const working = setInterval(() => this.safely(() => msg.working()), this.deps.options.consumer.workingIntervalMs);
    try {
      const idProblem = commandIdProblem(delivery.commandId || undefined);
      if (idProblem) return await this.refuseWithoutId(delivery, idProblem);
      const cached = await this.deps.cache.get(delivery.commandId);
      if (cached) {
        this.publishReply(delivery, cached);
        msg.ack();
        return;
      }
      // The spare delivery: the last attempt crashed before it could settle; give up without rerunning it.
      const spare = msg.info.deliveryCount > this.deps.options.consumer.deliveriesMax;
      const outcome: Outcome = spare
        ? { kind: 'retry', detail: 'the last attempt did not finish' }
        : await this.run(delivery);
      await this.settle(delivery, outcome);
    } catch (error) {
      // The cache, the dead-letter stream or the connection failed: nothing was acked,
      // so a later delivery (here or in another replica) finishes the job.
      this.deps.logger.warn?.(
        `command ${delivery.commandId} on ${msg.subject}: ${describe(error)}; will be redelivered`,
      );
      this.safely(() => msg.nak(backoffMs(this.deps.options.retry, msg.info.deliveryCount)));
    } finally {
      clearInterval(working);
    }
  }

  private async run(d: Delivery): Promise<Outcome> {
    let payload: unknown;
    try {
      payload = JSON.parse(Buffer.from(d.msg.data).toString('utf8'));
    } catch (error) {
      const errors = [{ field: '$', message: `malformed JSON: ${(error as Error).message}` }];
      return {
        kind: 'refused',
        reason: 'decode_failed',
        detail: 'command body is not JSON',
        errors,
        reply: { ok: false, error: validationError(errors) },
      };
    }
    const command = d.msg.subject.slice(d.msg.subject.lastIndexOf('.') + 1);
    const handler = this.deps.handlerFor(command);
    // Retried rather than refused: during a rolling upgrade another replica may know it.
    if (!handler) return { kind: 'retry', detail: `no @MessagePattern('${command}') handler` };
    try {
      const result = await handler(payload, new JetStreamCommandContext([d.msg, d.commandId, d.traceparent]));
      const value = await lastValueFrom(this.deps.toObservable(result), { defaultValue: null });
      return { kind: 'answered', reply: { ok: true, value: value === undefined ? null : value } };
    } catch (error) {
      return classify(error);
    }
  }

  private async settle(d: Delivery, outcome: Outcome): Promise<void> {
    if (outcome.kind === 'answered') return this.answer(d, outcome.reply, () => d.msg.ack());
    if (outcome.kind === 'refused') {
      await this.deadLetter(d, outcome.reason, outcome.detail, outcome.errors);
      return this.answer(d, outcome.reply, () => d.msg.term());
    }
    const deliveries = d.msg.info.deliveryCount;
    if (deliveries < this.deps.options.consumer.deliveriesMax) {
      d.msg.nak(backoffMs(this.deps.options.retry, deliveries));
      return;
    }
    await this.deadLetter(d, 'max_deliveries_exceeded', outcome.detail, []);
    const message = `command failed ${deliveries} times and was dead-lettered`;
    await this.answer(d, { ok: false, error: { type: 'max_deliveries_exceeded', message, deliveries } }, () =>
      d.msg.term(),
    );
  }

  /** Cache first, then reply, then settle the message: a crash in between re-sends the cached answer. */
  private async answer(d: Delivery, reply: CommandReply<unknown>, finish: () => void): Promise<void> {
    const data = encodeReply(reply);
    await this.deps.cache.put(d.commandId, data);
    this.publishReply(d, data);
    finish();
  }

  private async refuseWithoutId(d: Delivery, problem: string): Promise<void> {
    const errors = [{ field: `headers.${Headers.commandId}`, message: problem }];
    await this.deadLetter(d, 'decode_failed', 'command has no usable command id', errors);
    // Nothing to cache under: without an id the command cannot be repeated anyway.
    this.publishReply(d, encodeReply({ ok: false, error: validationError(errors) }));
    d.msg.term();
  }

  private async deadLetter(
    d: Delivery,
    reason: DeadLetter['reason'],
    detail: string,
    errors: readonly FieldError[],
  ): Promise<void> {
    const { msg } = d;
    await publishDeadLetter(
      this.deps.js,
      this.deps.options.names,
      {
        source: deadLetterSourceFor(this.deps.options.service),
        reason,
        detail,
        errors,
        originalSubject: msg.subject,
        originalStream: msg.info.stream,
        originalSequence: msg.info.streamSequence,
        deliveries: msg.info.deliveryCount,
        data: msg.data,
        ...(msg.headers ? { headers: msg.headers } : {}),
      },
      this.deps.options.publishTimeoutMs,
      this.deps.options.deadLetterStream.maxMsgSizeBytes,
    );
    this.deps.logger.warn?.(
      `command ${d.commandId || '(no id)'} on ${msg.subject} dead-lettered: ${reason}: ${detail}`,
    );
  }

  private publishReply(d: Delivery, data: Uint8Array): void {
    if (!d.replyTo) return;
    const hdrs = natsHeaders();
    hdrs.set(Headers.commandId, d.commandId);
    if (d.traceparent) hdrs.set(Headers.traceparent, d.traceparent);
    this.deps.nc.publish(d.replyTo, data, { headers: hdrs });
  }

  private safely(action: () => void): void {
    try {
      action();
    } catch (error) {
      this.deps.logger.warn?.(`could not settle a command message: ${describe(error)}`);
    }
  }
}

/** Maps what Nest's RPC exception filter emits to an outcome. */
export function classify(error: unknown): Outcome {
  if (isValidationRpcError(error)) {
    const errors = [...error.errors];
    return {
      kind: 'refused',
      reason: 'validation_failed',
      detail: 'command payload failed validation',
      errors,
      reply: { ok: false, error: validationError(errors) },
    };
  }
  const typed = error as { type?: unknown; message?: unknown } | null;
  if (typed !== null && typeof typed === 'object' && typeof typed.type === 'string') {
    // A handler threw RpcException({type, message, …}): a deliberate, final refusal.
    const message = typeof typed.message === 'string' ? typed.message : typed.type;
    const reply: CommandReply<unknown> = {
      ok: false,
      error: { type: 'rejected', reason: typed.type, message, detail: error },
    };
    return { kind: 'refused', reason: 'handler_rejected', detail: `${typed.type}: ${message}`, errors: [], reply };
  }
  // Anything else (Nest reports it as "Internal server error" and logs the cause) may be transient.
  return { kind: 'retry', detail: describe(error) };
}

export function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}
