// The NATS side of a service's start-up: connect, provision and verify the streams,
// and read what an acknowledgement really guarantees. Each failure becomes a message
// that says what to do, not a stack trace.
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { tallyNames, type TallyNames } from '@tally/contracts';
import {
  connectNats,
  provisionTallyStreams,
  readDurabilityReport,
  tallyStreamSpecs,
  type DurabilityReport,
  type StreamLimits,
} from '@tally/platform-jetstream';
import { DependencyUnavailable } from './boot.js';
import type { TallyConfig } from './config.schema.js';
import type { ReadinessCheck } from './health.js';

export interface NatsRuntime {
  readonly names: TallyNames;
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly durability: DurabilityReport;
  readonly readiness: ReadinessCheck;
  close(): Promise<void>;
}

export function streamLimitsOf(config: TallyConfig): StreamLimits {
  const s = config.streams;
  return {
    storage: s.storage,
    replicas: s.replicas,
    duplicateWindowMs: s.duplicate_window_ms,
    maxAgeMs: s.max_age_ms,
    maxBytes: s.max_bytes,
    maxMsgSizeBytes: s.max_msg_size_bytes,
  };
}

export async function startNatsRuntime(config: TallyConfig, service: string): Promise<NatsRuntime> {
  const names = tallyNames(config.nats.namespace);
  let nc: NatsConnection;
  try {
    nc = await connectNats({
      url: config.nats.url,
      name: service,
      connectTimeoutMs: config.nats.connect_timeout_ms,
      maxReconnectAttempts: -1,
      reconnectTimeWaitMs: config.nats.reconnect_time_wait_ms,
    });
  } catch (error) {
    throw new DependencyUnavailable(
      `NATS at ${config.nats.url}`,
      'Start a nats-server with JetStream (`nats-server -js`; Debian/Ubuntu package nats-server) or set NATS_URL.',
      error,
    );
  }
  const js = jetstream(nc, { timeout: config.nats.publish_timeout_ms });
  const jsm = await jetstreamManager(nc, { timeout: config.nats.publish_timeout_ms }).catch((error: unknown) => {
    throw new DependencyUnavailable(
      `JetStream on ${config.nats.url}`,
      'The server must run with JetStream enabled (-js).',
      error,
    );
  });
  const specs = tallyStreamSpecs(names, streamLimitsOf(config));
  await provisionTallyStreams(jsm, names, streamLimitsOf(config));
  const durability = await readDurabilityReport(
    nc,
    jsm,
    specs.map((s) => s.name),
    { assumeSyncAlways: config.nats.assume_sync_always },
  );
  const readiness: ReadinessCheck = {
    name: 'nats',
    async check() {
      if (nc.isClosed()) return { ok: false, details: { error: 'connection closed' } };
      const rttMs = await nc.rtt();
      return { ok: true, details: { url: config.nats.url, rtt_ms: rttMs, durability } };
    },
  };
  return { names, nc, js, jsm, durability, readiness, close: () => nc.drain() };
}
