// What a @MessagePattern handler can learn about the command it is handling, via @Ctx(),
// whichever transport carried it.
import { BaseRpcContext } from '@nestjs/microservices';
import type { JsMsg } from '@nats-io/jetstream';
import type { Msg } from '@nats-io/nats-core';

/** What every command transport tells a handler. */
export interface CommandContext {
  /** The id that makes the command idempotent: derive event ids from it. */
  getCommandId(): string;
  /** The W3C trace context the caller sent, if any. */
  getTraceparent(): string | undefined;
}

type Args = [msg: JsMsg, commandId: string, traceparent: string | undefined];

export class JetStreamCommandContext extends BaseRpcContext<Args> implements CommandContext {
  getMessage(): JsMsg {
    return this.args[0];
  }

  getSubject(): string {
    return this.args[0].subject;
  }

  /** The id that makes the command idempotent: derive event ids from it. */
  getCommandId(): string {
    return this.args[1];
  }

  /** 1 on the first delivery; more when an earlier attempt failed or its ack was lost. */
  getDeliveryCount(): number {
    return this.args[0].info.deliveryCount;
  }

  /** The W3C trace context the caller sent, if any. */
  getTraceparent(): string | undefined {
    return this.args[2];
  }
}

/** A command that arrived as a core NATS request (ADR 0025). */
export class CoreCommandContext
  extends BaseRpcContext<[msg: Msg, commandId: string, traceparent: string | undefined]>
  implements CommandContext
{
  getSubject(): string {
    return this.args[0].subject;
  }

  getCommandId(): string {
    return this.args[1];
  }

  getTraceparent(): string | undefined {
    return this.args[2];
  }
}
