// What a JetStream acknowledgement really guarantees on this deployment, read at
// start-up and logged. The I/O (readDurabilityReport) is kept apart from the judgement
// (formatDurabilityReport) so the rules can be tested on any server version.
import { JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';

const STREAM_NOT_FOUND = 10059;

/** nats-server acks after fsync only from 2.10.23 on, and only with `sync_interval: always`. */
export const FSYNC_BEFORE_ACK_MIN_VERSION = '2.10.23';

export type StreamDurability =
  | { readonly name: string; readonly replicas: number; readonly storage: string }
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
}

export interface DurabilityReport {
  readonly server_version: string;
  readonly server_name: string;
  readonly jetstream_enabled: boolean;
  readonly streams: readonly { readonly name: string; readonly replicas: number; readonly storage: string }[];
  readonly acks_backed_by_fsync: boolean;
  readonly warnings: readonly string[];
}

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
  const streams: DurabilityReport['streams'][number][] = [];
  for (const stream of input.streams) {
    if ('missing' in stream) {
      warnings.push(`stream ${stream.name} does not exist`);
      continue;
    }
    streams.push({ name: stream.name, replicas: stream.replicas, storage: stream.storage });
    if (stream.replicas < 3)
      warnings.push(
        `stream ${stream.name} has ${stream.replicas} replica(s): losing one server loses acknowledged events`,
      );
    if (stream.storage !== 'file')
      warnings.push(`stream ${stream.name} uses ${stream.storage} storage: a restart loses it`);
  }
  return {
    server_version: input.serverVersion,
    server_name: input.serverName,
    jetstream_enabled: input.jetstreamEnabled,
    streams,
    acks_backed_by_fsync: input.jetstreamEnabled && fsyncCapable && input.assumeSyncAlways,
    warnings,
  };
}

export interface DurabilityReportOptions {
  readonly assumeSyncAlways: boolean;
}

/** Reads the server's version and each stream's replicas and storage, then judges them. */
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
      const config = (await jsm.streams.info(name)).config;
      streams.push({ name, replicas: config.num_replicas, storage: String(config.storage) });
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
  });
}
