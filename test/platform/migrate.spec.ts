// Proves issue 9 item 1's `tally migrate`: streams made by an earlier release (discard old, a byte limit, purgeable
// events) and KV buckets that allowed roll-ups and purges (ADR 0051) are moved in place, keeping every message and
// key, and a second run finds nothing to do.
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiscardPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { tallyNames } from '@tally/contracts';
import { leaseBucketName } from '@tally/platform-app';
import {
  connectNats,
  kvStreamName,
  tallyStreamSpecs,
  toStreamConfig,
  type StreamLimits,
} from '@tally/platform-jetstream';
import { deleteNamespaceStreams, sharedNatsUrl, uniqueNamespace } from '@tally/testing';

const OLD_BYTES = 64 * 1024 * 1024;
const namespace = uniqueNamespace('mig');
const dir = mkdtempSync(join(tmpdir(), 'tally-migrate-'));
afterAll(async () => {
  await deleteNamespaceStreams(sharedNatsUrl(), namespace);
  rmSync(dir, { recursive: true, force: true });
});

function runCli(args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', './tools/register.mjs', 'apps/cli/src/main.ts', ...args], {
    env: {
      ...process.env,
      NATS_URL: sharedNatsUrl(),
      TALLY_NAMESPACE: namespace,
      DATABASE_URL: '',
      TALLY_SQLITE_PATH: join(dir, 'tally.sqlite'),
      TALLY__STREAMS__QUEUE_MAX_BYTES: String(OLD_BYTES),
      TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(OLD_BYTES),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

describe('tally migrate', () => {
  it('issue 9 item 1, ADR 0051: moves streams of the old policy and buckets that allowed roll-ups in place, keeping every event and key', async () => {
    const names = tallyNames(namespace);
    const limits: StreamLimits = {
      storage: 'file',
      replicas: 1,
      duplicateWindowMs: 120_000,
      maxMsgSizeBytes: 1_048_576,
      eventMaxBytes: OLD_BYTES,
      queueMaxBytes: OLD_BYTES,
      deadLetterMaxBytes: OLD_BYTES,
      deadLetterMaxAgeMs: 30 * 86_400_000,
    };
    const nc = await connectNats({
      url: sharedNatsUrl(),
      name: 'migrate-test',
      connectTimeoutMs: 5_000,
      maxReconnectAttempts: 0,
      reconnectTimeWaitMs: 100,
    });
    try {
      const jsm = await jetstreamManager(nc);
      // What the previous release created: every stream discard old with a byte limit, events purgeable, no DLQ age.
      for (const spec of tallyStreamSpecs(names, limits)) {
        const old = { ...spec, discard: 'old' as const, denyPurge: false, maxAgeMs: 0 };
        await jsm.streams.add({ ...toStreamConfig(old), discard: DiscardPolicy.Old });
      }
      const js = jetstream(nc);
      for (let i = 0; i < 25; i++)
        await js.publish(names.budgetEventSubject(`tree-${i % 3}`), `{"n":${i}}`, { msgID: `old-${i}` });
      // The idempotency bucket as nats.js made it for the previous release (default limits): roll-ups and purges allowed.
      const records = names.idempotencyBucket;
      const oldRecords = await new Kvm(js).create(records, {
        history: 1,
        ttl: 86_400_000,
        max_bytes: 64 * 1024 * 1024,
        maxValueSize: 1_024,
      });
      await oldRecords.put('record', '{}');

      const first = await runCli(['migrate']);
      expect(first.code).toBe(0);
      expect(first.output).toMatch(
        new RegExp(
          `stream ${names.budgetEventsStream} moved to the budgetEvents policy: .*max_bytes is ${OLD_BYTES}, expected -1`,
        ),
      );
      expect(first.output).toContain('discard is old, expected new');
      expect(first.output).toMatch(
        new RegExp(`stream ${names.deadLetterStream} moved to the deadLetter policy: max_age is 0`),
      );
      expect(first.output).not.toContain('WARNING');

      const budget = await jsm.streams.info(names.budgetEventsStream);
      expect(budget.config).toMatchObject({
        discard: DiscardPolicy.New,
        max_bytes: -1,
        deny_delete: true,
        deny_purge: true,
      });
      expect(budget.state).toMatchObject({ messages: 25, first_seq: 1, last_seq: 25 });
      expect((await jsm.streams.info(names.workQueueStream)).config.discard).toBe(DiscardPolicy.New);
      expect(first.output).toContain(
        `KV bucket ${records} moved to deny roll-ups, purges and deletes: allow_rollup_hdrs is true, expected false`,
      );
      expect(first.output).toContain(`KV bucket ${leaseBucketName(namespace)} does not exist yet`);
      const recordStream = await jsm.streams.info(kvStreamName(records));
      expect(recordStream.config).toMatchObject({ allow_rollup_hdrs: false, deny_purge: true, deny_delete: true });
      expect(recordStream.state.messages).toBe(1);

      const second = await runCli(['migrate']);
      expect(second.code).toBe(0);
      expect(second.output).toContain(`stream ${names.budgetEventsStream} already has the budgetEvents policy`);
      expect(second.output).not.toContain('moved to');
      expect(second.output).toContain(`KV bucket ${records} already denies roll-ups, purges and deletes`);
    } finally {
      await nc.close();
    }
  }, 120_000);
});
