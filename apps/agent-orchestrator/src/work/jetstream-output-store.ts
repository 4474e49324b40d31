// The work-output stream (ADR 0019): a reply too large for its event, in chunks of at most one
// event's size, chunk i on `<ns>.work.out.<work>.<ordinal>.<i>`. Each chunk's message id is
// its subject and the blob's digest, so a re-sent write dedupes; a read takes each chunk's
// last message and checks the reassembled blob against the reference's size and digest.
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { TallyNames } from '@tally/contracts';
import { sha256Hex, type OutputStore } from '@tally/orchestrator-application';
import type { OutputRef } from '@tally/orchestrator-domain';

export interface OutputStoreOptions {
  /** Bytes per chunk: what one stream message holds beside its headers. */
  readonly chunkBytes: number;
  /** The most chunks one blob may take, from output_bytes_max. */
  readonly chunksMax: number;
  readonly publishTimeoutMs: number;
}

export class JetStreamOutputStore implements OutputStore {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly names: TallyNames,
    private readonly options: OutputStoreOptions,
  ) {
    if (!(options.chunkBytes >= 1024 && options.chunksMax >= 1)) throw new Error('invalid output store options');
  }

  async put(workId: string, ordinal: number, blob: Uint8Array): Promise<OutputRef> {
    const chunks = Math.max(1, Math.ceil(blob.length / this.options.chunkBytes));
    if (chunks > this.options.chunksMax)
      throw new Error(`output of ${blob.length} bytes needs ${chunks} chunks, more than ${this.options.chunksMax}`);
    const subject = this.names.workOutputSubject(workId, ordinal);
    const sha256 = sha256Hex(blob);
    // One after the other: a chunk is a whole message, and a burst of them would only queue.
    for (let i = 0; i < chunks; i++) {
      const part = blob.subarray(i * this.options.chunkBytes, (i + 1) * this.options.chunkBytes);
      await this.js.publish(`${subject}.${i}`, part, {
        msgID: `${subject}.${i}:${sha256}`,
        timeout: this.options.publishTimeoutMs,
      });
    }
    const output_bytes = outputBytesOf(blob);
    return { stream: this.names.workOutputStream, subject, bytes: blob.length, sha256, chunks, output_bytes };
  }

  async get(ref: OutputRef): Promise<Uint8Array> {
    if (!(ref.chunks >= 1 && ref.chunks <= this.options.chunksMax))
      throw new Error(`output reference names ${ref.chunks} chunks`);
    const parts: Uint8Array[] = [];
    for (let i = 0; i < ref.chunks; i++) {
      const msg = await this.jsm.streams.getMessage(ref.stream, { last_by_subj: `${ref.subject}.${i}` });
      if (!msg) throw new Error(`output chunk ${i} of ${ref.subject} is missing`);
      parts.push(msg.data);
    }
    const blob = Buffer.concat(parts);
    if (blob.length !== ref.bytes || sha256Hex(blob) !== ref.sha256)
      throw new Error(`output at ${ref.subject} does not match its reference (${blob.length} of ${ref.bytes} bytes)`);
    return blob;
  }
}

/** The reply text's size inside the blob, for the reference (read once, at write time). */
function outputBytesOf(blob: Uint8Array): number {
  const parsed = JSON.parse(Buffer.from(blob).toString('utf8')) as { output?: unknown };
  return typeof parsed.output === 'string' ? Buffer.byteLength(parsed.output, 'utf8') : 0;
}
