// The caller's side of a core NATS command (ADR 0025): one request, one reply, through the
// connection's shared reply subscription. A lost request or reply, no responders (every
// replica restarting) and an `unavailable` answer are all the same to the caller: re-send
// with the same command id, which the handler answers from the ledger if it already ran.
// When the attempts are used up the outcome is unknown and the caller fails closed.
import { headers as natsHeaders, RequestError, type NatsConnection } from '@nats-io/nats-core';
import { Headers, type CommandService, type TallyNames } from '@tally/contracts';
import { activeTraceparent } from '@tally/platform-jetstream';
import { CommandTimeout, type SendOptions } from './command-client.js';
import type { CommandSender } from './command-sender.js';
import { commandIdProblem, decodeReply, type CommandReply } from './wire.js';

export interface CoreCommandClientOptions {
  readonly names: TallyNames;
  /**
   * Pause before re-sending when no replica took the request (no responders, or an
   * `unavailable` answer): a replica may be restarting. A lost reply is re-sent at once.
   */
  readonly retryDelayMs: number;
}

export class CoreCommandClient implements CommandSender {
  constructor(
    private readonly nc: NatsConnection,
    private readonly options: CoreCommandClientOptions,
  ) {
    if (!(options.retryDelayMs >= 0)) throw new Error('retryDelayMs must be >= 0');
  }

  async send<TReply>(
    service: CommandService,
    command: string,
    commandId: string,
    payload: unknown,
    options: SendOptions,
  ): Promise<CommandReply<TReply>> {
    const idProblem = commandIdProblem(commandId);
    if (idProblem) throw new Error(`command id ${idProblem}`);
    if (!(options.attemptsMax >= 1) || !(options.timeoutMs > 0))
      throw new Error('attemptsMax must be >= 1 and timeoutMs > 0');
    const subject = this.options.names.requestSubject(service, command);
    const data = Buffer.from(JSON.stringify(payload ?? null));
    const hdrs = natsHeaders();
    hdrs.set(Headers.commandId, commandId);
    // The caller's trace: given, or the active span's (with tracing on, every command carries one).
    const traceparent = options.traceparent ?? activeTraceparent();
    if (traceparent) hdrs.set(Headers.traceparent, traceparent);
    const started = performance.now();
    let lastError: unknown;
    for (let attempt = 1; attempt <= options.attemptsMax; attempt++) {
      let pause = false;
      try {
        const msg = await this.nc.request(subject, data, { timeout: options.timeoutMs, headers: hdrs });
        const reply = decodeReply<TReply>(msg.data);
        if (reply.ok || reply.error.type !== 'unavailable') return reply;
        lastError = new Error(reply.error.message);
        pause = true;
      } catch (error) {
        // A timeout may hide a command that ran: the re-send carries the same id, so it runs at most once in effect.
        lastError = error;
        pause = error instanceof RequestError && error.isNoResponders();
      }
      if (pause && attempt < options.attemptsMax && this.options.retryDelayMs > 0)
        await new Promise((resolve) => setTimeout(resolve, this.options.retryDelayMs));
    }
    throw new CommandTimeout(
      subject,
      commandId,
      options.attemptsMax,
      Math.round(performance.now() - started),
      lastError,
    );
  }

  /** Nothing to release: requests use the connection's shared reply subscription. */
  async close(): Promise<void> {}
}
