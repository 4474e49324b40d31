// Proves start-up provisioning against a real nats-server: it is idempotent, it refuses an
// existing stream or reply bucket whose settings differ, naming the setting, and no bucket
// can be emptied by a roll-up, a purge or a message delete (ADR 0051), old ones included.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { JetStreamApiError, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { headers } from '@nats-io/nats-core';
import { sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import { StreamConfigConflict } from '../src/provisioning.js';
import { ensureKvBucket, ensureReplyBucket, kvStreamName, reconcileKvBucket } from '../src/kv-buckets.js';
import { provisionTallyStreams, tallyStreamSpecs } from '../src/streams.js';
import { natsFixture, testStreamLimits, type NatsFixture } from './fixtures.js';

const replyLimits = { ttlMs: 60_000, replicas: 1, maxBytes: 8 * 1024 * 1024 };

const bucketSpec = (bucket: string) => ({
  bucket,
  ttlMs: 60_000,
  replicas: 1,
  maxBytes: 1_048_576,
  maxValueSizeBytes: 1_024,
});

describe('stream provisioning', () => {
  let f: NatsFixture;
  /** A publish into the bucket whose roll-up header would replace every key with this one. */
  const rollupAll = (bucket: string, key: string) => {
    const h = headers();
    h.set('Nats-Rollup', 'all');
    return f.js.publish(`$KV.${bucket}.${key}`, 'everything else is gone', { headers: h });
  };
  beforeEach(async () => {
    f = await natsFixture(sharedNatsUrl(), uniqueNamespace('prov'));
  });
  afterEach(async () => f.dispose());

  it('provisioning twice is idempotent: the first run creates, the second verifies and changes nothing', async () => {
    const first = await provisionTallyStreams(f.jsm, f.names, testStreamLimits);
    expect(first.map((s) => s.outcome)).toEqual(Array(7).fill('created'));
    const before = await f.jsm.streams.info(f.names.workQueueStream);
    const second = await provisionTallyStreams(f.jsm, f.names, testStreamLimits);
    expect(second.map((s) => s.outcome)).toEqual(Array(7).fill('verified'));
    const after = await f.jsm.streams.info(f.names.workQueueStream);
    expect(after.config).toEqual(before.config);
    expect(after.config.retention).toBe(RetentionPolicy.Workqueue);
    const events = await f.jsm.streams.info(f.names.budgetEventsStream);
    expect(events.config.subjects).toEqual([f.names.budgetEventsWildcard]);
    expect(events.config.deny_delete).toBe(true);
  });

  it('start-up refuses an existing stream with a different max_age, naming the setting', async () => {
    await provisionTallyStreams(f.jsm, f.names, testStreamLimits);
    const attempt = provisionTallyStreams(f.jsm, f.names, { ...testStreamLimits, deadLetterMaxAgeMs: 3_600_000 });
    await expect(attempt).rejects.toBeInstanceOf(StreamConfigConflict);
    await expect(attempt).rejects.toThrow(/max_age is 86400000000000, expected 3600000000000/);
  });

  it('start-up refuses an existing work queue with limits retention, and creates nothing when any stream conflicts', async () => {
    const queue = tallyStreamSpecs(f.names, testStreamLimits).find((s) => s.name === f.names.workQueueStream)!;
    await f.jsm.streams.add({
      name: queue.name,
      subjects: [...queue.subjects],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
    });
    const attempt = provisionTallyStreams(f.jsm, f.names, testStreamLimits);
    await expect(attempt).rejects.toThrow(
      new RegExp(
        `stream ${queue.name} exists with a conflicting configuration: retention is limits, expected workqueue`,
      ),
    );
    // The budget stream comes first in the list, yet it was not created: conflicts are found before anything changes.
    await expect(f.jsm.streams.info(f.names.budgetEventsStream)).rejects.toThrow(/stream not found/);
  });

  it('the command-reply bucket is created once, reopened idempotently, and refused when its TTL differs', async () => {
    const kv = await ensureReplyBucket(f.js, f.names, 'budget', replyLimits);
    await kv.put('cmd-1', '{"ok":true}');
    const again = await ensureReplyBucket(f.js, f.names, 'budget', replyLimits);
    expect((await again.get('cmd-1'))?.string()).toBe('{"ok":true}');
    const status = await again.status();
    expect(status.ttl).toBe(60_000);
    expect(status.history).toBe(1);
    await expect(ensureReplyBucket(f.js, f.names, 'budget', { ...replyLimits, ttlMs: 5_000 })).rejects.toThrow(
      /max_age is 60000000000, expected 5000000000/,
    );
  });

  it('ADR 0051 a bucket refuses a Nats-Rollup publish, a purge and a message delete; puts, creates and deletes by key work', async () => {
    const spec = bucketSpec(f.names.commandRepliesBucket('budget'));
    const kv = await ensureKvBucket(f.js, spec);
    await kv.put('a', 'first');
    await kv.put('b', 'second');
    expect(await serverRefusal(rollupAll(spec.bucket, 'a'))).toBe('rollup not permitted');
    expect(await serverRefusal(f.jsm.streams.purge(kvStreamName(spec.bucket)))).toBe('stream purge not permitted');
    expect(await serverRefusal(f.jsm.streams.deleteMessage(kvStreamName(spec.bucket), 1))).toBe(
      'message delete not permitted',
    );
    // The normal path: a delete marker, then a create over it; nothing else was lost.
    await kv.delete('a');
    expect(await kv.create('a', 'again')).toBeGreaterThan(0);
    expect([(await kv.get('a'))?.string(), (await kv.get('b'))?.string()]).toEqual(['again', 'second']);
    await f.jsm.streams.delete(kvStreamName(spec.bucket));
  });

  it('ADR 0051 a bucket an earlier release made (roll-ups and purges allowed) is moved in place, keeping its keys', async () => {
    const spec = bucketSpec(f.names.commandRepliesBucket('work'));
    // What nats.js's Kvm.create makes, as every earlier release did.
    const old = await new Kvm(f.js).create(spec.bucket, {
      history: 1,
      ttl: spec.ttlMs,
      max_bytes: spec.maxBytes,
      maxValueSize: spec.maxValueSizeBytes,
      storage: StorageType.File,
    });
    await old.put('kept', 'value');
    const moved = await reconcileKvBucket(f.jsm, spec);
    expect(moved).toEqual({
      bucket: spec.bucket,
      outcome: 'updated',
      changes: [
        'allow_rollup_hdrs is true, expected false',
        'deny_purge is false, expected true',
        'deny_delete is false, expected true',
      ],
    });
    expect((await reconcileKvBucket(f.jsm, spec)).outcome).toBe('verified');
    expect((await (await ensureKvBucket(f.js, spec)).get('kept'))?.string()).toBe('value');
    expect(await serverRefusal(rollupAll(spec.bucket, 'kept'))).toBe('rollup not permitted');
    expect(await serverRefusal(f.jsm.streams.purge(kvStreamName(spec.bucket)))).toBe('stream purge not permitted');
    // Any other difference is still refused, naming it, and changes nothing.
    await expect(reconcileKvBucket(f.jsm, { ...spec, ttlMs: 5_000 })).rejects.toThrow(
      /max_age is 60000000000, expected 5000000000/,
    );
    await f.jsm.streams.delete(kvStreamName(spec.bucket));
  });

  it('limits that cannot work are refused before reaching the server', () => {
    expect(() =>
      tallyStreamSpecs(f.names, { ...testStreamLimits, deadLetterMaxAgeMs: 60_000, duplicateWindowMs: 120_000 }),
    ).toThrow(/duplicateWindowMs=120000 exceeds deadLetterMaxAgeMs=60000/);
    expect(() => tallyStreamSpecs(f.names, { ...testStreamLimits, replicas: 0 })).toThrow(/replicas=0/);
  });
});

/** The server's reason for refusing the call ('accepted' when it did not). */
async function serverRefusal(attempt: Promise<unknown>): Promise<string> {
  try {
    await attempt;
    return 'accepted';
  } catch (error) {
    if (error instanceof JetStreamApiError) return error.message;
    throw error;
  }
}
