// Shared set-up for the event-store tests: a real NATS connection, a private stream
// per test, and a tiny event type registry.
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { EventRegistry, tallyNames, type TallyNames } from '@tally/contracts';
import { IsInt, IsString } from 'class-validator';
import { connectNats } from '../src/connection.js';
import { ensureStream, type StreamSpec } from '../src/provisioning.js';
import { JetStreamEventStore } from '../src/event-store.js';

export class CounterIncremented {
  @IsInt() by!: number;
  @IsString() writer!: string;
}

export const counterRegistry = () => new EventRegistry([{ type: 'CounterIncremented', version: 1, payload: CounterIncremented }]);

export function eventStreamSpec(name: string, subjects: string[]): StreamSpec {
  return {
    name,
    subjects,
    retention: 'limits',
    storage: 'file',
    replicas: 1,
    duplicateWindowMs: 120_000,
    maxAgeMs: 0,
    maxBytes: 256 * 1024 * 1024,
    maxMsgSizeBytes: 1024 * 1024,
    denyDelete: true,
    denyPurge: false,
  };
}

export interface StoreFixture {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: TallyNames;
  store: JetStreamEventStore;
  dispose(): Promise<void>;
}

export async function storeFixture(url: string, namespace: string): Promise<StoreFixture> {
  const nc = await connectNats({ url, name: `test-${namespace}`, connectTimeoutMs: 5000, maxReconnectAttempts: -1, reconnectTimeWaitMs: 100 });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const names = tallyNames(namespace);
  await ensureStream(jsm, eventStreamSpec(names.workEventsStream, [names.workEventsWildcard]));
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
  return { eventId: id, type: 'CounterIncremented', aggregateId, occurredAt: '2026-01-01T00:00:00.000Z', payload: { by, writer } };
}
