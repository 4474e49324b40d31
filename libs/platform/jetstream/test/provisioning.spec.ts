// Proves start-up provisioning against a real nats-server: it is idempotent, and it
// refuses an existing stream or reply bucket whose settings differ, naming the setting.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import { StreamConfigConflict } from '../src/provisioning.js';
import { ensureReplyBucket, provisionTallyStreams, tallyStreamSpecs } from '../src/streams.js';
import { natsFixture, testStreamLimits, type NatsFixture } from './fixtures.js';

const replyLimits = { ttlMs: 60_000, replicas: 1, maxBytes: 8 * 1024 * 1024 };

describe('stream provisioning', () => {
  let f: NatsFixture;
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
    const kv = await ensureReplyBucket(f.js, f.names, replyLimits);
    await kv.put('cmd-1', '{"ok":true}');
    const again = await ensureReplyBucket(f.js, f.names, replyLimits);
    expect((await again.get('cmd-1'))?.string()).toBe('{"ok":true}');
    const status = await again.status();
    expect(status.ttl).toBe(60_000);
    expect(status.history).toBe(1);
    await expect(ensureReplyBucket(f.js, f.names, { ...replyLimits, ttlMs: 5_000 })).rejects.toThrow(
      /max_age is 60000000000, expected 5000000000/,
    );
  });

  it('limits that cannot work are refused before reaching the server', () => {
    expect(() =>
      tallyStreamSpecs(f.names, { ...testStreamLimits, deadLetterMaxAgeMs: 60_000, duplicateWindowMs: 120_000 }),
    ).toThrow(/duplicateWindowMs=120000 exceeds deadLetterMaxAgeMs=60000/);
    expect(() => tallyStreamSpecs(f.names, { ...testStreamLimits, replicas: 0 })).toThrow(/replicas=0/);
  });
});
