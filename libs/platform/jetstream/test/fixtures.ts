// Shared set-up for the JetStream adapter tests: a real NATS connection, private
// streams per test namespace, a tiny event type registry and polling helpers.
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { EventRegistry, tallyNames, type TallyNames } from '@tally/contracts';
import { testEventStreamSpec } from '@tally/testing';
import { IsInt, IsString } from 'class-validator';
import { connectNats } from '../src/connection.js';
import { ensureStream, type StreamSpec } from '../src/provisioning.js';
import { JetStreamEventStore } from '../src/event-store.js';
import { kvStreamName } from '../src/kv-buckets.js';
import type { StreamLimits } from '../src/streams.js';
import type { DeadLetterRecord } from '../src/dead-letter.js';

export class CounterIncremented {
  @IsInt() by!: number;
  @IsString() writer!: string;
}

export const counterRegistry = () =>
  new EventRegistry([{ type: 'CounterIncremented', version: 1, payload: CounterIncremented }]);

export const eventStreamSpec = (name: string, subjects: string[]): StreamSpec => testEventStreamSpec(name, subjects);

export interface StoreFixture {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: TallyNames;
  store: JetStreamEventStore;
  dispose(): Promise<void>;
}

export async function storeFixture(
  url: string,
  namespace: string,
  overrides: Partial<StreamSpec> = {},
): Promise<StoreFixture> {
  const nc = await connectNats({
    url,
    name: `test-${namespace}`,
    connectTimeoutMs: 5000,
    maxReconnectAttempts: -1,
    reconnectTimeWaitMs: 100,
  });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const names = tallyNames(namespace);
  await ensureStream(jsm, { ...eventStreamSpec(names.workEventsStream, [names.workEventsWildcard]), ...overrides });
  const store = new JetStreamEventStore(js, jsm, {
    stream: names.workEventsStream,
    registry: counterRegistry(),
    publishTimeoutMs: 5000,
    loadEventsMax: 100_000,
    loadIdleTimeoutMs: 5000,
  });
  return {
    nc,
    js,
    jsm,
    names,
    store,
    async dispose() {
      await jsm.streams.delete(names.workEventsStream).catch(() => undefined);
      await nc.drain();
    },
  };
}

export function counterEvent(id: string, aggregateId: string, by: number, writer: string) {
  return {
    eventId: id,
    type: 'CounterIncremented',
    aggregateId,
    occurredAt: '2026-01-01T00:00:00.000Z',
    payload: { by, writer },
  };
}

/** Small, explicit limits for test streams. */
export const testStreamLimits: StreamLimits = {
  storage: 'file',
  replicas: 1,
  duplicateWindowMs: 120_000,
  maxMsgSizeBytes: 1024 * 1024,
  eventMaxBytes: 64 * 1024 * 1024,
  queueMaxBytes: 64 * 1024 * 1024,
  deadLetterMaxBytes: 64 * 1024 * 1024,
  deadLetterMaxAgeMs: 86_400_000,
};

export interface NatsFixture {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: TallyNames;
  /** Deletes every stream of the namespace (and its reply bucket), then drains. */
  dispose(): Promise<void>;
}

export async function natsFixture(url: string, namespace: string): Promise<NatsFixture> {
  const nc = await connectNats({
    url,
    name: `test-${namespace}`,
    connectTimeoutMs: 5000,
    maxReconnectAttempts: -1,
    reconnectTimeWaitMs: 100,
  });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const names = tallyNames(namespace);
  return {
    nc,
    js,
    jsm,
    names,
    async dispose() {
      const streams = [
        names.budgetEventsStream,
        names.workEventsStream,
        names.workQueueStream,
        names.commandsStream,
        names.deadLetterStream,
        kvStreamName(names.commandRepliesBucket('budget')),
        kvStreamName(names.commandRepliesBucket('work')),
      ];
      for (const stream of streams) await jsm.streams.delete(stream).catch(() => undefined);
      await nc.drain();
    },
  };
}

/** Every record in the namespace's dead-letter stream, oldest first. */
export async function deadLetters(jsm: JetStreamManager, names: TallyNames): Promise<DeadLetterRecord[]> {
  const info = await jsm.streams.info(names.deadLetterStream);
  const out: DeadLetterRecord[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const msg = await jsm.streams.getMessage(names.deadLetterStream, { seq });
    if (msg) out.push(msg.json<DeadLetterRecord>());
  }
  return out;
}

/** Polls until the condition holds; fails with `what` after timeoutMs. */
export async function eventually(
  what: string,
  condition: () => Promise<boolean> | boolean,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
