// Proves the stream positions read-your-writes waits for (ADR 0048) against a real nats-server: a subject's last
// sequence (0 for a subject never written), and a stream end that answers each caller from a question sent after
// it arrived, even while an older question is still on its way back, with one question in flight at a time.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { LatencyProxy, sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import { connectNats } from '../src/connection.js';
import { StreamEnd, subjectLastSequence } from '../src/stream-position.js';
import { counterEvent, sleep, storeFixture, type StoreFixture } from './fixtures.js';

/** Each way between the asking connection and the server: long enough to publish while an answer travels. */
const DELAY_MS = 300;
/** Callers of one burst. */
const BURST = 200;

describe('stream positions for read-your-writes (ADR 0048)', () => {
  let f: StoreFixture;
  let proxy: LatencyProxy;
  let far: NatsConnection;

  beforeAll(async () => {
    f = await storeFixture(sharedNatsUrl(), uniqueNamespace('pos'));
    proxy = await LatencyProxy.start(sharedNatsUrl());
    far = await connectNats({
      url: proxy.url,
      name: 'stream-position-far',
      connectTimeoutMs: 5_000,
      maxReconnectAttempts: -1,
      reconnectTimeWaitMs: 100,
    });
  });

  afterAll(async () => {
    await far?.close();
    await proxy?.stop();
    await f?.dispose();
  });

  async function append(aggregate: string, id: string): Promise<number> {
    const subject = f.names.workEventSubject(aggregate);
    const expected = await f.store.lastSequence(subject);
    return (await f.store.append(subject, [counterEvent(id, aggregate, 1, 'w')], expected)).lastSequence;
  }

  it("ADR 0048 a subject's last sequence is that of its last commit, and 0 for a subject never written", async () => {
    await append('one', 'one-1');
    const last = await append('one', 'one-2');
    await append('other', 'other-1');
    const stream = f.names.workEventsStream;
    expect(await subjectLastSequence(f.jsm, stream, f.names.workEventSubject('one'))).toBe(last);
    expect(await subjectLastSequence(f.jsm, stream, f.names.workEventSubject('never-written'))).toBe(0);
  });

  it('ADR 0048 a caller that arrives while a question is on its way back gets an answer that includes what was written before it arrived', async () => {
    proxy.delayMs = DELAY_MS;
    const end = new StreamEnd(await jetstreamManager(far), f.names.workEventsStream);
    const before = end.afterNow();
    // The first question has reached the server and been answered; its answer is still on the wire.
    await sleep(DELAY_MS * 1.5);
    const written = await append('late', 'late-1');
    const after = end.afterNow();
    expect(await before).toBeLessThan(written);
    expect(await after).toBeGreaterThanOrEqual(written);
    proxy.delayMs = 0;
  });

  it('ADR 0048 a burst of callers costs the server one question at a time, and each gets the end as of its arrival', async () => {
    const written = await append('burst', 'burst-1');
    const questions: string[] = [];
    const watcher = f.nc.subscribe(`$JS.API.STREAM.INFO.${f.names.workEventsStream}`, {
      callback: (_error, msg) => {
        questions.push(msg.subject);
      },
    });
    await f.nc.flush();
    const end = new StreamEnd(f.jsm, f.names.workEventsStream);
    const answers = await Promise.all(Array.from({ length: BURST }, () => end.afterNow()));
    await f.nc.flush();
    watcher.unsubscribe();
    // The first caller asks; everyone who arrives while it is out shares the one question queued behind it.
    expect(questions.length).toBeGreaterThanOrEqual(1);
    expect(questions.length).toBeLessThanOrEqual(2);
    for (const answer of answers) expect(answer).toBeGreaterThanOrEqual(written);
  });
});
