// JetStream stream snapshots and restores through the JetStream API
// ($JS.API.STREAM.SNAPSHOT.<stream> and $JS.API.STREAM.RESTORE.<stream>), the way `tally
// backup` and `tally restore` keep the ledger (ADR 0022). nats.js v3 has no helper for them,
// so the wire protocol is written out here:
// - snapshot: the server streams the stream's store as chunks to an inbox; each chunk is
//   acknowledged by replying to it (that is the server's flow control: it stops sending
//   while too many bytes are unacknowledged) and an empty message ends it, with a status
//   header when the server gave up;
// - restore: the server names a subject; each chunk goes there as a request it answers
//   (empty, or an error text), and an empty request ends it and answers with the stream.
// A snapshot is the server's own store, so sequences, subjects, headers, message ids,
// timestamps and the duplicate window come back byte for byte.
import type { StreamConfig, StreamState } from '@nats-io/jetstream';
import { createInbox, type Msg, type NatsConnection } from '@nats-io/nats-core';

const API = '$JS.API.STREAM';

/** What the server reported about a stream when its snapshot began. */
export interface StreamSnapshotInfo {
  readonly config: StreamConfig;
  readonly state: StreamState;
}

export interface SnapshotOptions {
  /** Bytes per chunk the server sends (the server accepts 1 KiB to 1 MiB). */
  readonly chunkBytes: number;
  /** Bound on the API request that starts the snapshot. */
  readonly apiTimeoutMs: number;
  /** Longest silence between two chunks before the snapshot is abandoned. */
  readonly idleTimeoutMs: number;
  /** Where the chunks are delivered: the connection's inbox prefix, which its user may subscribe to. */
  readonly inboxPrefix?: string;
}

export interface RestoreOptions {
  readonly apiTimeoutMs: number;
  /** Bound on the server's answer to one chunk. */
  readonly chunkTimeoutMs: number;
  /** Bound on the final answer, while the server checks and loads the restored store. */
  readonly finishTimeoutMs: number;
}

/** The server refused or broke off a snapshot or a restore; the message says which stream and why. */
export class StreamSnapshotError extends Error {
  override readonly name = 'StreamSnapshotError';
}

interface ApiError {
  readonly error?: { readonly code?: number; readonly err_code?: number; readonly description?: string };
}

function parseApi<T>(what: string, msg: Msg): T {
  const body = JSON.parse(new TextDecoder().decode(msg.data)) as T & ApiError;
  if (body.error) {
    const { code, err_code: errCode, description } = body.error;
    throw new StreamSnapshotError(`${what}: ${description ?? 'refused'} (${code ?? '?'}/${errCode ?? '?'})`);
  }
  return body;
}

/**
 * Snapshots `stream`, handing each chunk to `write` in order; the next chunk is
 * acknowledged only once `write` has finished with this one, so a slow disk slows the
 * server instead of filling memory. Message blocks are checked on the server first.
 */
export async function snapshotStream(
  nc: NatsConnection,
  stream: string,
  write: (chunk: Uint8Array) => Promise<void>,
  options: SnapshotOptions,
): Promise<StreamSnapshotInfo> {
  if (!(options.chunkBytes >= 1_024 && options.chunkBytes <= 1_048_576))
    throw new Error(`chunkBytes must be 1 KiB..1 MiB, got ${options.chunkBytes}`);
  const inbox = createInbox(options.inboxPrefix);
  const sub = nc.subscribe(inbox);
  try {
    const request = { deliver_subject: inbox, chunk_size: options.chunkBytes, jsck: true };
    const info = parseApi<StreamSnapshotInfo>(
      `snapshot of ${stream}`,
      await nc.request(`${API}.SNAPSHOT.${stream}`, JSON.stringify(request), { timeout: options.apiTimeoutMs }),
    );
    const chunks = sub[Symbol.asyncIterator]();
    for (;;) {
      const next = await withIdleTimeout(chunks.next(), options.idleTimeoutMs, () => sub.unsubscribe());
      if (next === 'idle' || next.done)
        throw new StreamSnapshotError(
          `snapshot of ${stream}: no chunk for ${options.idleTimeoutMs} ms; the server stopped sending`,
        );
      const msg = next.value;
      if (msg.data.length === 0) {
        const status = msg.headers;
        if (status && status.code >= 400)
          throw new StreamSnapshotError(
            `snapshot of ${stream}: the server gave up: ${status.code} ${status.description}`,
          );
        return info;
      }
      await write(msg.data);
      msg.respond();
    }
  } finally {
    sub.unsubscribe();
  }
}

async function withIdleTimeout<T>(step: Promise<T>, timeoutMs: number, onIdle: () => void): Promise<T | 'idle'> {
  let timer: NodeJS.Timeout | undefined;
  const idle = new Promise<'idle'>((resolve) => {
    timer = setTimeout(() => (onIdle(), resolve('idle')), timeoutMs);
  });
  try {
    return await Promise.race([step, idle]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Restores a stream from its snapshot chunks. The stream must not exist. `config` becomes
 * the restored stream's configuration (the server checks that its name matches the
 * snapshot's); returns the state the server reports once the store is loaded.
 */
export async function restoreStream(
  nc: NatsConnection,
  snapshot: StreamSnapshotInfo,
  chunks: AsyncIterable<Uint8Array>,
  options: RestoreOptions,
): Promise<StreamState> {
  const stream = snapshot.config.name;
  const what = `restore of ${stream}`;
  const { deliver_subject: deliver } = parseApi<{ deliver_subject: string }>(
    what,
    await nc.request(`${API}.RESTORE.${stream}`, JSON.stringify({ config: snapshot.config, state: snapshot.state }), {
      timeout: options.apiTimeoutMs,
    }),
  );
  const decoder = new TextDecoder();
  for await (const chunk of chunks) {
    if (chunk.length === 0) continue;
    const answer = await nc.request(deliver, chunk, { timeout: options.chunkTimeoutMs });
    if (answer.data.length > 0) throw new StreamSnapshotError(`${what}: ${decoder.decode(answer.data)}`);
  }
  const done = parseApi<{ state: StreamState }>(
    what,
    await nc.request(deliver, new Uint8Array(0), { timeout: options.finishTimeoutMs }),
  );
  return done.state;
}
