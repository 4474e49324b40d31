// Proves the durability report tells the truth about what an ack guarantees: on the
// real (2.9) server, and for the version and configuration rules on their own.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import { formatDurabilityReport, readDurabilityReport, versionAtLeast } from '../src/durability.js';
import { provisionTallyStreams } from '../src/streams.js';
import { natsFixture, testStreamLimits, type NatsFixture } from './fixtures.js';

describe('durability report', () => {
  let f: NatsFixture;
  beforeAll(async () => {
    f = await natsFixture(sharedNatsUrl(), uniqueNamespace('dur'));
    await provisionTallyStreams(f.jsm, f.names, testStreamLimits);
  });
  afterAll(async () => f.dispose());

  it("states the server version, each stream's replicas, and acks_backed_by_fsync=false on a pre-2.10.23 server", async () => {
    const version = f.nc.info!.version;
    const streams = [f.names.budgetEventsStream, f.names.workEventsStream];
    const report = await readDurabilityReport(f.nc, f.jsm, streams, { assumeSyncAlways: false });
    expect(report.server_version).toBe(version);
    expect(report.jetstream_enabled).toBe(true);
    expect(report.streams).toEqual([
      {
        name: f.names.budgetEventsStream,
        replicas: 1,
        storage: 'file',
        bytes: 0,
        max_bytes: 64 * 1024 * 1024,
        fullness: 0,
      },
      {
        name: f.names.workEventsStream,
        replicas: 1,
        storage: 'file',
        bytes: 0,
        max_bytes: 64 * 1024 * 1024,
        fullness: 0,
      },
    ]);
    expect(report.degraded).toEqual([]);
    expect(report.acks_backed_by_fsync).toBe(false);
    // Even the operator's word cannot make a pre-2.10.23 server (this 2.9) fsync before it acks.
    const declared = await readDurabilityReport(f.nc, f.jsm, streams, { assumeSyncAlways: true });
    const fsyncCapable = versionAtLeast(version, '2.10.23');
    expect(declared.acks_backed_by_fsync).toBe(fsyncCapable);
    expect(declared.warnings.some((w) => w.includes('acknowledges before fsync'))).toBe(!fsyncCapable);
    expect(report.warnings.some((w) => w.includes(`stream ${f.names.budgetEventsStream} has 1 replica(s)`))).toBe(true);
  });

  it('a missing stream is reported as a warning, not silently skipped', async () => {
    const report = await readDurabilityReport(f.nc, f.jsm, ['NO_SUCH_STREAM_' + f.names.namespace.toUpperCase()], {
      assumeSyncAlways: false,
    });
    expect(report.streams).toEqual([]);
    expect(report.warnings.some((w) => w.includes('does not exist'))).toBe(true);
  });

  it('acks count as fsync-backed only on >= 2.10.23 with sync_interval: always declared, and R3 file streams raise no warning', () => {
    const stream = { name: 'S', replicas: 3, storage: 'file', bytes: 10, maxBytes: -1 };
    const base = { serverName: 'n1', jetstreamEnabled: true, streams: [stream] };
    const good = formatDurabilityReport({ ...base, serverVersion: '2.10.23', assumeSyncAlways: true });
    expect(good.acks_backed_by_fsync).toBe(true);
    expect(good.warnings).toEqual([]);
    expect(
      formatDurabilityReport({ ...base, serverVersion: '2.10.22', assumeSyncAlways: true }).acks_backed_by_fsync,
    ).toBe(false);
    const undeclared = formatDurabilityReport({ ...base, serverVersion: '2.11.4', assumeSyncAlways: false });
    expect(undeclared.acks_backed_by_fsync).toBe(false);
    expect(undeclared.warnings).toEqual([expect.stringContaining('sync_interval: always')]);
    const memory = formatDurabilityReport({
      ...base,
      serverVersion: '2.12.0',
      assumeSyncAlways: true,
      streams: [{ ...stream, name: 'M', replicas: 1, storage: 'memory' }],
    });
    expect(memory.warnings).toHaveLength(2);
  });

  it('issue 9 items 1 and 6: a stream past the fullness share, a replica behind or offline, or no leader makes the report degraded', () => {
    const base = { serverName: 'n1', serverVersion: '2.10.23', jetstreamEnabled: true, assumeSyncAlways: true };
    const healthy = {
      name: 'E',
      replicas: 3,
      storage: 'file',
      bytes: 700,
      maxBytes: 1000,
      cluster: {
        leader: 'n1',
        followers: [
          { name: 'n2', current: true, offline: false, lag: 0 },
          { name: 'n3', current: true, offline: false, lag: 0 },
        ],
      },
    };
    const ok = formatDurabilityReport({ ...base, streams: [healthy] });
    expect(ok.degraded).toEqual([]);
    expect(ok.streams[0]).toMatchObject({ fullness: 0.7, max_bytes: 1000, leader: 'n1', replicas_current: 3 });
    const full = formatDurabilityReport({ ...base, streams: [{ ...healthy, bytes: 850 }] });
    expect(full.degraded).toEqual([expect.stringMatching(/stream E is 85% full \(850 of 1000 bytes\)/)]);
    const strict = formatDurabilityReport({ ...base, fullnessDegradedRatio: 0.5, streams: [healthy] });
    expect(strict.degraded).toHaveLength(1);
    const hurt = formatDurabilityReport({
      ...base,
      streams: [
        {
          ...healthy,
          cluster: {
            leader: undefined,
            followers: [
              { name: 'n2', current: false, offline: false, lag: 42 },
              { name: 'n3', current: false, offline: true, lag: 0 },
            ],
          },
        },
      ],
    });
    expect(ok.occ_serializable).toBe(true);
    expect(hurt.streams[0]).toMatchObject({ leader: null, replicas_current: 0 });
    expect(hurt.degraded).toEqual([
      expect.stringContaining('stream E has no leader'),
      'stream E: replica n2 is behind (lag 42)',
      'stream E: replica n3 is offline',
    ]);
  });

  it('Issue 9: a clustered stream on a server before 2.9.21 is reported as not serializing optimistic concurrency (nats-server#4320)', () => {
    const clustered = {
      name: 'E',
      replicas: 3,
      storage: 'file',
      bytes: 0,
      maxBytes: -1,
      cluster: { leader: 'n1', followers: [{ name: 'n2', current: true, offline: false, lag: 0 }] },
    };
    const base = { serverName: 'n1', jetstreamEnabled: true, assumeSyncAlways: false };
    const old = formatDurabilityReport({ ...base, serverVersion: '2.9.10', streams: [clustered] });
    expect(old.occ_serializable).toBe(false);
    expect(old.warnings).toContainEqual(expect.stringContaining('nats-server#4320, fixed in 2.9.21'));
    expect(formatDurabilityReport({ ...base, serverVersion: '2.9.21', streams: [clustered] }).occ_serializable).toBe(
      true,
    );
    // One node serializes every write, whatever its version.
    const single = { ...clustered, replicas: 1, cluster: undefined };
    expect(formatDurabilityReport({ ...base, serverVersion: '2.9.10', streams: [single] }).occ_serializable).toBe(true);
  });
});
