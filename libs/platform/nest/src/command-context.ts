// What a @MessagePattern handler can learn about the command it is handling, via @Ctx().
import { BaseRpcContext } from '@nestjs/microservices';
import type { JsMsg } from '@nats-io/jetstream';

type Args = [msg: JsMsg, commandId: string, traceparent: string | undefined];

export class JetStreamCommandContext extends BaseRpcContext<Args> {
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
