// Proves the durable consumer ends every message explicitly against a real nats-server:
// poison is dead-lettered with its reason, failing handlers give up after deliveriesMax,
// and in-progress acks keep a slow handler's message from being redelivered.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { JsMsg } from '@nats-io/jetstream';
import { decodeJson } from '@tally/contracts';
import { sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import { IsInt, IsString, Length, Min } from 'class-validator';
import {
  startDurableConsumer,
  type DurableConsumerHandle,
  type DurableConsumerOptions,
} from '../src/durable-consumer.js';
import { provisionTallyStreams } from '../src/streams.js';
import { deadLetters, eventually, natsFixture, sleep, testStreamLimits, type NatsFixture } from './fixtures.js';

class WorkItem {
  @IsString() @Length(1, 64) work_id!: string;
  @IsInt() @Min(1) cost_minor!: number;
}

describe('durable consumer', () => {
  let f: NatsFixture;
  let handle: DurableConsumerHandle | undefined;
  beforeEach(async () => {
    f = await natsFixture(sharedNatsUrl(), uniqueNamespace('dc'));
    await provisionTallyStreams(f.jsm, f.names, testStreamLimits);
  });
  afterEach(async () => {
    await handle?.stop();
    handle = undefined;
    await f.dispose();
  });

  function options(overrides: Partial<DurableConsumerOptions<WorkItem>>): DurableConsumerOptions<WorkItem> {
    return {
      nc: f.nc,
      js: f.js,
      jsm: f.jsm,
      names: f.names,
      stream: f.names.workQueueStream,
      durable: 'dispatch',
      filterSubject: f.names.workQueueSubject,
      deadLetterSource: 'dispatch',
      ackWaitMs: 2000,
      deliveriesMax: 3,
      ackPendingMax: 64,
      fetchBatch: 8,
      concurrency: 4,
      expiresMs: 1000,
      workingIntervalMs: 500,
      nakDelayMs: 50,
      nakDelayMaxMs: 200,
      ackTimeoutMs: 2000,
      fetchRetryDelayMs: 100,
      stopTimeoutMs: 5000,
      decode: (msg: JsMsg) => decodeJson(WorkItem, msg.data),
      handle: async () => undefined,
      ...overrides,
    };
  }

  const publish = (body: string) => f.js.publish(f.names.workQueueSubject, body);

  it('poison messages (malformed JSON, failed validation) are dead-lettered with reason and field errors while the next good message is processed', async () => {
    const seen: string[] = [];
    await publish(JSON.stringify({ work_id: 'w1', cost_minor: 5 }));
    const malformed = await publish('{"work_id": "w2", cost_minor');
    const invalid = await publish(JSON.stringify({ work_id: '', cost_minor: -3 }));
    await publish(JSON.stringify({ work_id: 'w4', cost_minor: 7 }));
    handle = await startDurableConsumer(
      options({ concurrency: 1, handle: async (item) => void seen.push(item.work_id) }),
    );

    await eventually(
      'both good messages handled and both poison dead-lettered',
      async () => seen.length === 2 && (await deadLetters(f.jsm, f.names)).length === 2,
      10_000,
    );
    expect(seen).toEqual(['w1', 'w4']);
    const letters = await deadLetters(f.jsm, f.names);
    const bySeq = new Map(letters.map((l) => [l.original_sequence, l]));
    const bad = bySeq.get(malformed.seq)!;
    expect(bad.reason).toBe('decode_failed');
    expect(bad.errors[0]!.field).toBe('$');
    expect(Buffer.from(bad.data_base64, 'base64').toString()).toBe('{"work_id": "w2", cost_minor');
    const wrong = bySeq.get(invalid.seq)!;
    expect(wrong.reason).toBe('validation_failed');
    expect(wrong.errors.map((e) => e.field).sort()).toEqual(['cost_minor', 'work_id']);
    expect(wrong.original_stream).toBe(f.names.workQueueStream);
    // Every message ended explicitly: nothing is pending or waiting for an ack.
    await eventually(
      'consumer drained',
      async () => {
        const info = await f.jsm.consumers.info(f.names.workQueueStream, 'dispatch');
        return info.num_pending === 0 && info.num_ack_pending === 0;
      },
      5000,
    );
  });

  it('a message whose handler keeps failing is dead-lettered exactly once, after deliveriesMax, as max_deliveries_exceeded', async () => {
    const deliveries: number[] = [];
    const poison = await publish(JSON.stringify({ work_id: 'w-fail', cost_minor: 1 }));
    handle = await startDurableConsumer(
      options({
        handle: async (_item, msg) => {
          deliveries.push(msg.info.deliveryCount);
          throw new Error('provider down');
        },
      }),
    );
    await eventually(
      'the failing message is dead-lettered',
      async () => (await deadLetters(f.jsm, f.names)).length >= 1,
      10_000,
    );
    // Longer than ackWait plus the largest nak delay: a stray redelivery would show up here.
    await sleep(2500);
    expect(deliveries).toEqual([1, 2, 3]);
    const letters = await deadLetters(f.jsm, f.names);
    expect(letters).toHaveLength(1);
    expect(letters[0]!.reason).toBe('max_deliveries_exceeded');
    expect(letters[0]!.detail).toContain('provider down');
    expect(letters[0]!.deliveries).toBe(3);
    expect(letters[0]!.original_sequence).toBe(poison.seq);
    const info = await f.jsm.consumers.info(f.names.workQueueStream, 'dispatch');
    expect(info.num_ack_pending).toBe(0);
  });

  it('in-progress acks keep a handler that runs longer than ackWait alive: no redelivery', async () => {
    const deliveries: number[] = [];
    await publish(JSON.stringify({ work_id: 'w-slow', cost_minor: 1 }));
    handle = await startDurableConsumer(
      options({
        ackWaitMs: 1000,
        workingIntervalMs: 250,
        handle: async (_item, msg) => {
          deliveries.push(msg.info.deliveryCount);
          await sleep(3500);
        },
      }),
    );
    await eventually(
      'the slow handler finished and its ack landed',
      async () => {
        const info = await f.jsm.consumers.info(f.names.workQueueStream, 'dispatch');
        return deliveries.length > 0 && info.num_ack_pending === 0 && info.num_pending === 0;
      },
      10_000,
    );
    expect(deliveries).toEqual([1]);
    const info = await f.jsm.consumers.info(f.names.workQueueStream, 'dispatch');
    expect(info.num_redelivered).toBe(0);
    expect(await deadLetters(f.jsm, f.names)).toHaveLength(0);
  });

  it('never runs more than `concurrency` handlers at once, and stop() waits for the running ones to finish', async () => {
    for (let i = 0; i < 20; i++) await publish(JSON.stringify({ work_id: `w${i}`, cost_minor: 1 }));
    let running = 0;
    let peak = 0;
    const finished: string[] = [];
    handle = await startDurableConsumer(
      options({
        concurrency: 3,
        fetchBatch: 10,
        handle: async (item) => {
          peak = Math.max(peak, ++running);
          await sleep(40);
          running--;
          finished.push(item.work_id);
        },
      }),
    );
    await eventually('some handlers started', () => finished.length >= 5, 10_000);
    await handle.stop();
    handle = undefined;
    expect(running).toBe(0);
    const done = finished.length;
    await sleep(200);
    expect(finished.length).toBe(done);
    expect(peak).toBeLessThanOrEqual(3);
    expect(peak).toBe(3);
  });
});
