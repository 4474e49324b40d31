// Refused HTTP input lands in the dead-letter stream with its reason, like a bad message. A
// caller the access guard verified gets its body kept, bounded and with every credential
// replaced by its fingerprint (ADR 0016, ADR 0007); a stranger's body is kept as its size and
// digest only, so refusing it costs the stream a few hundred bytes whatever was sent (ADR 0050).
import { createHash } from 'node:crypto';
import { publishDeadLetter, type DeadLetter } from '@tally/platform-jetstream';
import type { RejectedRequest } from './problem.js';
import type { HostContext } from './service-host.js';

export async function deadLetterRequest(ctx: HostContext, rejected: RejectedRequest): Promise<void> {
  await publishDeadLetter(
    ctx.nats.js,
    ctx.nats.names,
    rejected.verified ? keptWhole(ctx, rejected) : keptAsDigest(ctx, rejected),
    ctx.config.nats.publish_timeout_ms,
    ctx.config.streams.max_msg_size_bytes,
  );
}

function keptWhole(ctx: HostContext, rejected: RejectedRequest): DeadLetter {
  return {
    source: `http-${ctx.service}`,
    reason: 'validation_failed',
    detail: `${rejected.method} ${rejected.path}`,
    errors: rejected.errors,
    originalSubject: `http:${rejected.method}:${rejected.path}`,
    data: Buffer.from(JSON.stringify(rejected.body ?? null)),
  };
}

/**
 * The digest covers the bytes received (none for a body refused unread). The path loses its
 * query, which may carry content. A stranger re-sending the same body to the same path within
 * the stream's duplicate window lands once: the digest is the message id.
 */
function keptAsDigest(ctx: HostContext, rejected: RejectedRequest): DeadLetter {
  const path = rejected.path.split('?')[0]!;
  const data = rejected.raw ?? new Uint8Array(0);
  const sha256 = createHash('sha256').update(data).digest('base64url');
  const key = createHash('sha256').update(`${rejected.method} ${path} ${sha256}`).digest('base64url');
  return {
    source: `http-${ctx.service}`,
    reason: 'validation_failed',
    detail: `${rejected.method} ${path}`,
    errors: rejected.errors,
    originalSubject: `http:${rejected.method}:${path}`,
    dedupeKey: `digest:${key}`,
    data,
    keep: 'digest',
  };
}
