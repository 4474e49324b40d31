// What a JetStream acknowledgement really guarantees on this deployment, read at
// start-up and logged. The I/O (readDurabilityReport) is kept apart from the judgement
// (formatDurabilityReport) so the rules can be tested on any server version.
import { JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';

const STREAM_NOT_FOUND = 10059;

/** nats-server acks after fsync only from 2.10.23 on, and only with `sync_interval: always`. */
export const FSYNC_BEFORE_ACK_MIN_VERSION = '2.10.23';

/**
 * Before 2.9.21 a clustered stream checks Nats-Expected-Last-Subject-Sequence before the
 * write is replicated, not as part of it, so two concurrent appends on one aggregate can
 * both pass (nats-server#4320). Optimistic concurrency between replicas of a service is
 * then not serializable: the ledger can fork.
 */
export const CLUSTERED_OCC_MIN_VERSION = '2.9.21';

/** One replica of a clustered stream as the leader sees it. */
export interface ReplicaHealth {
  readonly name: string;
  readonly current: boolean;
  readonly offline: boolean;
  /** Operations this replica is behind the leader. */
  readonly lag: number;
}

export type StreamDurability =
  | {
      readonly name: string;
      readonly replicas: number;
      readonly storage: string;
      readonly bytes: number;
      /** -1: no byte limit. */
      readonly maxBytes: number;
      /** Absent on a server that is not clustered. */
      readonly cluster?: { readonly leader: string | undefined; readonly followers: readonly ReplicaHealth[] };
    }
  | { readonly name: string; readonly missing: true };

export interface DurabilityInput {
  readonly serverVersion: string;
  readonly serverName: string;
  readonly jetstreamEnabled: boolean;
  readonly streams: readonly StreamDurability[];
  /**
   * The operator's word that the server runs with `sync_interval: always`; a client
   * cannot read that setting, so it must come from deployment config.
   */
  readonly assumeSyncAlways: boolean;
  /** A stream fuller than this share of its byte limit makes the report degraded. Default 0.8. */
  readonly fullnessDegradedRatio?: number;
}

export interface StreamReport {
  readonly name: string;
  readonly replicas: number;
  readonly storage: string;
  readonly bytes: number;
  /** null: the stream has no byte limit. */
  readonly max_bytes: number | null;
  /** bytes ÷ max_bytes, or null without a limit. */
  readonly fullness: number | null;
  /** Clustered streams only: the leader, and how many of the replicas (leader included) are current. */
  readonly leader?: string | null;
  readonly replicas_current?: number;
  readonly followers?: readonly ReplicaHealth[];
}

export interface DurabilityReport {
  readonly server_version: string;
  readonly server_name: string;
  readonly jetstream_enabled: boolean;
  readonly streams: readonly StreamReport[];
  readonly acks_backed_by_fsync: boolean;
  /**
   * Whether an append conditioned on the aggregate's last sequence is serialized by the
   * server: always on one node, on a cluster only from CLUSTERED_OCC_MIN_VERSION.
   */
  readonly occ_serializable: boolean;
  readonly warnings: readonly string[];
  /** Reasons the deployment works but needs an operator now: a stream nearly full, a replica behind or gone. */
  readonly degraded: readonly string[];
}

export const FULLNESS_DEGRADED_RATIO_DEFAULT = 0.8;

export function parseServerVersion(version: string): [number, number, number] {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version.trim());
  if (!match) return [0, 0, 0];
  return [Number(match[1]), Number(match[2]), Number(match[3])];
}

export function versionAtLeast(version: string, minimum: string): boolean {
  const have = parseServerVersion(version);
  const want = parseServerVersion(minimum);
  for (let i = 0; i < 3; i++) if (have[i] !== want[i]) return have[i]! > want[i]!;
  return true;
}

/** The judgement, with no I/O: what the acks guarantee and what an operator should fix. */
export function formatDurabilityReport(input: DurabilityInput): DurabilityReport {
  const warnings: string[] = [];
  const degraded: string[] = [];
  if (!input.jetstreamEnabled) warnings.push(`JetStream is not enabled on ${input.serverName}`);
  const fsyncCapable = versionAtLeast(input.serverVersion, FSYNC_BEFORE_ACK_MIN_VERSION);
  if (!fsyncCapable) {
    warnings.push(
      `nats-server ${input.serverVersion} acknowledges before fsync (it syncs about every 2 minutes): a power loss can drop acknowledged events; ` +
        `run >= ${FSYNC_BEFORE_ACK_MIN_VERSION} with sync_interval: always and R3 streams`,
    );
  } else if (!input.assumeSyncAlways) {
    warnings.push(
      `acks are not known to follow fsync: set sync_interval: always on the server and declare it in Tally's config`,
    );
  }
  const streams: StreamReport[] = [];
  for (const stream of input.streams) {
    if ('missing' in stream) {
      warnings.push(`stream ${stream.name} does not exist`);
      continue;
    }
    streams.push(
      judgeStream(stream, input.fullnessDegradedRatio ?? FULLNESS_DEGRADED_RATIO_DEFAULT, warnings, degraded),
    );
  }
  const clustered = streams.some((s) => s.replicas > 1 && s.leader !== undefined);
  const occSerializable = !clustered || versionAtLeast(input.serverVersion, CLUSTERED_OCC_MIN_VERSION);
  if (!occSerializable)
    warnings.push(
      `nats-server ${input.serverVersion} does not serialize the expected-sequence check on clustered streams ` +
        `(nats-server#4320, fixed in ${CLUSTERED_OCC_MIN_VERSION}): two replicas appending to one aggregate can both commit ` +
        `and fork the ledger; run one replica of each service, or upgrade the servers`,
    );
  return {
    server_version: input.serverVersion,
    server_name: input.serverName,
    jetstream_enabled: input.jetstreamEnabled,
    streams,
    acks_backed_by_fsync: input.jetstreamEnabled && fsyncCapable && input.assumeSyncAlways,
    occ_serializable: occSerializable,
    warnings,
    degraded,
  };
}

function judgeStream(
  stream: Exclude<StreamDurability, { missing: true }>,
  fullnessDegradedRatio: number,
  warnings: string[],
  degraded: string[],
): StreamReport {
  if (stream.replicas < 3)
    warnings.push(
      `stream ${stream.name} has ${stream.replicas} replica(s): losing one server loses acknowledged events`,
    );
  if (stream.storage !== 'file')
    warnings.push(`stream ${stream.name} uses ${stream.storage} storage: a restart loses it`);
  const limited = stream.maxBytes > 0;
  const fullness = limited ? stream.bytes / stream.maxBytes : null;
  if (fullness !== null && fullness > fullnessDegradedRatio)
    degraded.push(
      `stream ${stream.name} is ${Math.floor(fullness * 100)}% full (${stream.bytes} of ${stream.maxBytes} bytes): ` +
        `it refuses new messages when full; raise its limit`,
    );
  const report: StreamReport = {
    name: stream.name,
    replicas: stream.replicas,
    storage: stream.storage,
    bytes: stream.bytes,
    max_bytes: limited ? stream.maxBytes : null,
    fullness,
  };
  if (!stream.cluster) return report;
  const { leader, followers } = stream.cluster;
  const current = followers.filter((f) => f.current && !f.offline).length + (leader ? 1 : 0);
  if (!leader) degraded.push(`stream ${stream.name} has no leader: it accepts no writes until one is elected`);
  for (const f of followers)
    if (f.offline || !f.current)
      degraded.push(`stream ${stream.name}: replica ${f.name} is ${f.offline ? 'offline' : `behind (lag ${f.lag})`}`);
  return { ...report, leader: leader ?? null, replicas_current: current, followers };
}

export interface DurabilityReportOptions {
  readonly assumeSyncAlways: boolean;
  readonly fullnessDegradedRatio?: number;
}

/** Reads the server's version and each stream's replicas, storage, fullness and replica health, then judges them. */
export async function readDurabilityReport(
  nc: NatsConnection,
  jsm: JetStreamManager,
  streamNames: readonly string[],
  options: DurabilityReportOptions = { assumeSyncAlways: false },
): Promise<DurabilityReport> {
  const info = nc.info;
  if (!info) throw new Error('not connected: no server info to report on');
  const streams: StreamDurability[] = [];
  for (const name of streamNames) {
    try {
      const { config, state, cluster } = await jsm.streams.info(name);
      const followers = (cluster?.replicas ?? []).map((r) => ({
        name: r.name,
        current: r.current,
        offline: r.offline === true,
        lag: r.lag ?? 0,
      }));
      streams.push({
        name,
        replicas: config.num_replicas,
        storage: String(config.storage),
        bytes: state.bytes,
        maxBytes: config.max_bytes,
        ...(cluster ? { cluster: { leader: cluster.leader || undefined, followers } } : {}),
      });
    } catch (error) {
      if (!(error instanceof JetStreamApiError) || error.code !== STREAM_NOT_FOUND) throw error;
      streams.push({ name, missing: true });
    }
  }
  return formatDurabilityReport({
    serverVersion: info.version,
    serverName: info.server_name,
    jetstreamEnabled: info.jetstream === true,
    streams,
    assumeSyncAlways: options.assumeSyncAlways,
    ...(options.fullnessDegradedRatio === undefined ? {} : { fullnessDegradedRatio: options.fullnessDegradedRatio }),
  });
}
