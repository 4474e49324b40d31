// A ClientProxy over JetStreamCommandClient, for Nest code that prefers
// `client.send(pattern, data)`. The pattern names the command, the data carries the
// command id; a refused command errors the observable with its CommandError.
import { ClientProxy, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import { Headers, type CommandService } from '@tally/contracts';
import type { JetStreamCommandClient, SendOptions } from './command-client.js';

export interface CommandPattern {
  readonly service: CommandService;
  readonly command: string;
}

export interface CommandPacketData<P = unknown> {
  readonly commandId: string;
  readonly payload: P;
}

export class JetStreamCommandClientProxy extends ClientProxy {
  constructor(
    private readonly client: JetStreamCommandClient,
    private readonly sendOptions: Omit<SendOptions, 'traceparent'>,
  ) {
    super();
  }

  async connect(): Promise<void> {
    await this.client.start();
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  unwrap<T>(): T {
    return this.client as T;
  }

  protected publish(packet: ReadPacket<CommandPacketData>, callback: (packet: WritePacket) => void): () => void {
    const { service, command } = packet.pattern as CommandPattern;
    const traceparent = packet.metadata?.[Headers.traceparent];
    this.client
      .send(service, command, packet.data.commandId, packet.data.payload, {
        ...this.sendOptions,
        ...(traceparent ? { traceparent } : {}),
      })
      .then(
        (reply) =>
          callback(reply.ok ? { response: reply.value, isDisposed: true } : { err: reply.error, isDisposed: true }),
        (error: unknown) => callback({ err: error, isDisposed: true }),
      );
    // A command cannot be un-sent: unsubscribing only stops listening for its reply.
    return () => undefined;
  }

  protected dispatchEvent<T = unknown>(): Promise<T> {
    return Promise.reject(new Error('commands expect a reply: use send(), not emit()'));
  }
}
