// What a caller of commands needs, whichever transport carries them: the durable JetStream
// commands (ADR 0003) or core NATS request/reply (ADR 0025). Both take a stable command id
// and give the same CommandReply; both throw CommandTimeout when the outcome is unknown.
import type { CommandService } from '@tally/contracts';
import type { SendOptions } from './command-client.js';
import type { CommandReply } from './wire.js';

export interface CommandSender {
  send<TReply>(
    service: CommandService,
    command: string,
    commandId: string,
    payload: unknown,
    options: SendOptions,
  ): Promise<CommandReply<TReply>>;
  close(): Promise<void>;
}
