// Proves the JetStream snapshot protocol behind `tally backup`/`tally restore` (ADR 0022): a
// stream restored from its snapshot onto an empty server has the same messages at the same
// sequences, with their subjects, headers, message ids and timestamps, keeps its duplicate
// window and its deny-delete policy, and appends continue its subject chains; a missing stream
// or an existing one is refused with a clear error.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream, jetstreamManager, type JetStreamManager, type StoredMsg } from '@nats-io/jetstream';
import { headers, type NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { PrivateNatsServer } from '@tally/testing';
import { restoreStream, snapshotStream, type StreamSnapshotInfo } from '../src/index.js';

const STREAM = 'SNAP_EVENTS';
const MESSAGES = 3_000;
const SUBJECTS = 13;
const snapshotLimits = { chunkBytes: 16 * 1024, apiTimeoutMs: 10_000, idleTimeoutMs: 10_000 };
const restoreLimits = { apiTimeoutMs: 10_000, chunkTimeoutMs: 10_000, finishTimeoutMs: 60_000 };

let server: PrivateNatsServer;
let nc: NatsConnection;
beforeAll(async () => {
  server = await PrivateNatsServer.start();
  nc = await connect({ servers: server.url });
});
afterAll(async () => {
  await nc?.close();
  await server?.dispose();
});

async function* replay(chunks: Uint8Array[]): AsyncIterable<Uint8Array> {
  for (const chunk of chunks) yield chunk;
}

function view(m: StoredMsg) {
  return { seq: m.seq, subject: m.subject, time: m.time.toISOString(), data: m.string(), headers: [...m.header] };
}

async function all(jsm: JetStreamManager): Promise<ReturnType<typeof view>[]> {
  const out = [];
  for (let seq = 1; seq <= MESSAGES; seq++) out.push(view((await jsm.streams.getMessage(STREAM, { seq }))!));
  return out;
}

describe('stream snapshot and restore (ADR 0022)', () => {
  it('9.8 a restored stream is the same stream: sequences, subjects, headers, message ids, timestamps, dedupe and subject chains', async () => {
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    await jsm.streams.add({ name: STREAM, subjects: ['snap.evt.>'], deny_delete: true, deny_purge: true });
    const acks = [];
    for (let i = 0; i < MESSAGES; i++) {
      const h = headers();
      h.set('Tally-Event-Type', `Type${i % 5}`);
      acks.push(
        js.publish(`snap.evt.${i % SUBJECTS}`, JSON.stringify({ i, note: 'é✓' }), { msgID: `e-${i}`, headers: h }),
      );
    }
    await Promise.all(acks);
    const before = await all(jsm);

    const chunks: Uint8Array[] = [];
    const info: StreamSnapshotInfo = await snapshotStream(nc, STREAM, async (c) => void chunks.push(c), snapshotLimits);
    expect(info.state.messages).toBe(MESSAGES);
    expect(chunks.length).toBeGreaterThan(1);

    await nc.close();
    await server.wipe();
    nc = await connect({ servers: server.url });
    const fresh = await jetstreamManager(nc);
    await expect(fresh.streams.info(STREAM)).rejects.toThrow(/stream not found/);

    const state = await restoreStream(nc, info, replay(chunks), restoreLimits);
    expect(state).toMatchObject({ messages: MESSAGES, first_seq: 1, last_seq: MESSAGES });
    expect(await all(fresh)).toEqual(before);
    expect((await fresh.streams.info(STREAM)).config).toMatchObject({ deny_delete: true, deny_purge: true });

    // The duplicate window survived: a retried publish is still answered as a duplicate.
    const js2 = jetstream(nc);
    const dup = await js2.publish(`snap.evt.${(MESSAGES - 1) % SUBJECTS}`, 'again', { msgID: `e-${MESSAGES - 1}` });
    expect({ duplicate: dup.duplicate, seq: dup.seq }).toEqual({ duplicate: true, seq: MESSAGES });
    // Subject chains continue: an append expecting the subject's last sequence from before succeeds.
    const last = before.filter((m) => m.subject === 'snap.evt.3').at(-1)!.seq;
    const next = await js2.publish('snap.evt.3', 'next', { msgID: 'n-1', expect: { lastSubjectSequence: last } });
    expect(next.seq).toBe(MESSAGES + 1);
  });

  it('9.8 a snapshot of a missing stream and a restore onto an existing stream are refused, naming the stream', async () => {
    await expect(snapshotStream(nc, 'NO_SUCH_STREAM', async () => undefined, snapshotLimits)).rejects.toThrow(
      /snapshot of NO_SUCH_STREAM: stream not found/,
    );
    const chunks: Uint8Array[] = [];
    const info = await snapshotStream(nc, STREAM, async (c) => void chunks.push(c), snapshotLimits);
    await expect(restoreStream(nc, info, replay(chunks), restoreLimits)).rejects.toThrow(
      new RegExp(`restore of ${STREAM}: .*(already in use|exist)`),
    );
  });
});
