// Bad input on the drop-in endpoints lands in the dead-letter stream with its reason, like
// every other rejected request (tokens in it are replaced by their fingerprint there).
import { publishDeadLetter } from '@tally/platform-jetstream';
import type { HostContext } from '@tally/platform-app';

export class RejectedDropIn {
  constructor(private readonly ctx: HostContext) {}

  async record(entrypoint: string, field: string, message: string, body: unknown): Promise<void> {
    const path = entrypoint === 'messages' ? '/v1/messages' : '/v1/chat/completions';
    await publishDeadLetter(
      this.ctx.nats.js,
      this.ctx.nats.names,
      {
        source: 'http-agent-orchestrator',
        reason: 'validation_failed',
        detail: `POST ${path}`,
        errors: [{ field, message }],
        originalSubject: `http:POST:${path}`,
        data: Buffer.from(JSON.stringify(body ?? null)),
      },
      this.ctx.config.nats.publish_timeout_ms,
      this.ctx.config.streams.max_msg_size_bytes,
    ).catch((error: unknown) => this.ctx.logger.error(error));
  }
}
