// The NATS side of a service's start-up: connect, provision and verify the streams,
// and read what an acknowledgement really guarantees. Each failure becomes a message
// that says what to do, not a stack trace.
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { tallyNames, type TallyNames } from '@tally/contracts';
import {
  connectNats,
  provisionTallyStreams,
  reconcileKvBucket,
  type NatsConnectionOptions,
  redactedServers,
  tallyStreamSpecs,
  type DurabilityReport,
  type StreamLimits,
} from '@tally/platform-jetstream';
import { DependencyUnavailable } from './boot.js';
import type { TallyConfig } from './config.schema.js';
import type { ReadinessCheck } from './health.js';
import { natsLoginMode, natsLoginOf } from './nats-credentials.js';
import { StreamWatch } from './stream-watch.js';
import { checkTopology, serviceTopology, TopologyMismatch } from './topology.js';

export interface NatsRuntime {
  readonly names: TallyNames;
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** The report read at boot; `watch` reads it live. */
  readonly durability: DurabilityReport;
  readonly watch: StreamWatch;
  readonly readiness: ReadinessCheck;
  close(): Promise<void>;
}

export function streamLimitsOf(config: TallyConfig): StreamLimits {
  const s = config.streams;
  return {
    storage: s.storage,
    replicas: s.replicas,
    duplicateWindowMs: s.duplicate_window_ms,
    maxMsgSizeBytes: s.max_msg_size_bytes,
    eventMaxBytes: s.max_bytes ?? -1,
    queueMaxBytes: s.queue_max_bytes,
    deadLetterMaxBytes: s.dead_letter_max_bytes,
    deadLetterMaxAgeMs: s.dead_letter_max_age_ms,
  };
}

export function idempotencyLimitsOf(config: TallyConfig) {
  const s = config.streams;
  return { ttlMs: s.idempotency_ttl_ms, replicas: s.replicas, maxBytes: s.idempotency_max_bytes };
}

export interface NatsClients {
  readonly names: TallyNames;
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
}

/** The connection options of config: servers without credentials, and the login beside them. */
export function natsConnectionOptionsOf(
  config: TallyConfig,
  name: string,
  inboxPrefix?: string,
): NatsConnectionOptions {
  const { servers, login } = natsLoginOf(config.nats);
  return {
    servers,
    login,
    name,
    ...(inboxPrefix ? { inboxPrefix } : {}),
    connectTimeoutMs: config.nats.connect_timeout_ms,
    maxReconnectAttempts: -1,
    reconnectTimeWaitMs: config.nats.reconnect_time_wait_ms,
  };
}

/**
 * Connects with the configured servers and credentials, and opens JetStream; provisions
 * nothing. A service passes its inbox prefix, so its least-privilege user may read its replies.
 */
export async function connectTallyNats(config: TallyConfig, name: string, inboxPrefix?: string): Promise<NatsClients> {
  const names = tallyNames(config.nats.namespace);
  const where = redactedServers(config.nats.url).join(', ');
  let nc: NatsConnection;
  try {
    nc = await connectNats(natsConnectionOptionsOf(config, name, inboxPrefix));
  } catch (error) {
    throw new DependencyUnavailable(
      `NATS at ${where}`,
      'Start a nats-server with JetStream (`nats-server -js`; Debian/Ubuntu package nats-server) or set NATS_URL. ' +
        `The client said: ${describeConnectError(error)} (login: ${natsLoginMode(config.nats)}).`,
    );
  }
  const js = jetstream(nc, { timeout: config.nats.publish_timeout_ms });
  const jsm = await jetstreamManager(nc, { timeout: config.nats.publish_timeout_ms }).catch(async (error: unknown) => {
    await nc.close();
    throw new DependencyUnavailable(
      `JetStream on ${where}`,
      'The server must run with JetStream enabled (-js).',
      error,
    );
  });
  return { names, nc, js, jsm };
}

/** The client's error, which names the server by host and port only, never by a URL with credentials. */
function describeConnectError(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.replace(/[a-z]+:\/\/[^@\s/]*@/gi, (m) => m.replace(/\/\/.*@/, '//'));
}

/**
 * A service's inboxes live under its own prefix, so its NATS user may subscribe there and
 * nowhere else: no service can read replies meant for another (deploy/nats permissions).
 */
export function serviceInboxPrefix(service: string): string {
  return `_INBOX.${service}`;
}

/**
 * Connects and makes sure the streams are there: provisioned here (nats.provision: auto), or
 * only checked against what this service needs (check), refusing the boot on a difference.
 */
export async function startNatsRuntime(
  config: TallyConfig,
  service: string,
  inboxPrefix = serviceInboxPrefix(service),
): Promise<NatsRuntime> {
  const { names, nc, js, jsm } = await connectTallyNats(config, service, inboxPrefix);
  const specs = tallyStreamSpecs(names, streamLimitsOf(config));
  try {
    if (config.nats.provision === 'check') {
      const differences = await checkTopology(jsm, serviceTopology(config, names, service));
      if (differences.length > 0) throw new TopologyMismatch(service, differences);
    } else {
      await provisionTallyStreams(jsm, names, streamLimitsOf(config));
      // The buckets this service uses (none for the CLI), moved in place when an earlier release made them.
      for (const bucket of serviceTopology(config, names, service).buckets) await reconcileKvBucket(jsm, bucket);
    }
  } catch (error) {
    await nc.close();
    throw error;
  }
  const watch = new StreamWatch(
    nc,
    jsm,
    specs.map((s) => s.name),
    { assumeSyncAlways: config.nats.assume_sync_always, fullnessDegradedRatio: config.streams.fullness_degraded_ratio },
  );
  const durability = await watch.report();
  const servers = redactedServers(config.nats.url);
  const readiness: ReadinessCheck = {
    name: 'nats',
    async check() {
      if (nc.isClosed()) return { ok: false, details: { error: 'connection closed' } };
      const rttMs = await nc.rtt();
      const report = await watch.report();
      return {
        ok: true,
        degraded: report.degraded,
        details: { servers, login: natsLoginMode(config.nats), rtt_ms: rttMs, durability: report },
      };
    },
  };
  return { names, nc, js, jsm, durability, watch, readiness, close: () => nc.drain() };
}
