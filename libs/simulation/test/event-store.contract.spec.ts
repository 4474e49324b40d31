// Proves the simulated event store behaves like JetStream: the same contract cases run
// against the real JetStream adapter on a real nats-server and against the simulator's store.
import { tallyNames } from '@tally/contracts';
import { connectNats, ensureStream, JetStreamEventStore } from '@tally/platform-jetstream';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { sharedNatsUrl, testEventStreamSpec, uniqueNamespace } from '@tally/testing';
import { SimEventStore, SimStream } from '../src/index.js';
import { contractRegistry, eventStoreContract, type ContractStoreFactory } from './event-store.contract.js';

const jetStreamStore: ContractStoreFactory = async (limits) => {
  const names = tallyNames(uniqueNamespace('esc'));
  const nc = await connectNats({
    url: sharedNatsUrl(),
    name: `test-${names.namespace}`,
    connectTimeoutMs: 5000,
    maxReconnectAttempts: -1,
    reconnectTimeWaitMs: 100,
  });
  const jsm = await jetstreamManager(nc);
  await ensureStream(jsm, {
    ...testEventStreamSpec(names.workEventsStream, [names.workEventsWildcard], limits.maxBytes),
    duplicateWindowMs: limits.duplicateWindowMs,
    maxMsgSizeBytes: limits.maxMsgSizeBytes,
  });
  const store = new JetStreamEventStore(jetstream(nc), jsm, {
    stream: names.workEventsStream,
    registry: contractRegistry(),
    publishTimeoutMs: 5000,
    loadEventsMax: 10_000,
    loadIdleTimeoutMs: 5000,
  });
  return {
    store,
    subject: (aggregate) => names.workEventSubject(aggregate),
    advance: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    async dispose() {
      await jsm.streams.delete(names.workEventsStream).catch(() => undefined);
      await nc.drain();
    },
  };
};

const simulatedStore: ContractStoreFactory = async (limits) => {
  let nowMs = 1_767_225_600_000;
  const stream = new SimStream({ name: 'SIM_EVENTS', ...limits }, contractRegistry(), () => nowMs);
  return {
    store: new SimEventStore(stream, { registry: contractRegistry(), loadEventsMax: 10_000 }),
    subject: (aggregate) => tallyNames('sim').workEventSubject(aggregate),
    advance: async (ms) => {
      nowMs += ms;
    },
    dispose: async () => undefined,
  };
};

eventStoreContract('JetStream on a real nats-server', jetStreamStore);
eventStoreContract('the simulator', simulatedStore);
