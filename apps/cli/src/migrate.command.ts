// `tally migrate`: moves the namespace's existing streams to the policy of this release
// (ADR 0002: the event streams discard new, keep everything, deny delete and purge) and its
// existing KV buckets to deny roll-ups, purges and message deletes (ADR 0051), then applies
// pending projection-schema migrations for every service. Kubernetes runs it as a
// Job before a release rolls out; a stream the server cannot move safely stops it.
import {
  connectTallyNats,
  OPERATOR_INBOX_PREFIX,
  loadConfig,
  openServiceDatabase,
  streamLimitsOf,
  tallyTopology,
  type TallyConfig,
} from '@tally/platform-app';
import {
  inspectKvBucket,
  reconcileKvBucket,
  reconcileStream,
  tallyStreamSpecs,
  type KvBucketSpec,
} from '@tally/platform-jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import { projectionSets } from './projection-sets.js';

export async function migrate(): Promise<number> {
  const config = loadConfig();
  await migrateStreams(config, (line) => process.stdout.write(`tally migrate: ${line}\n`));
  for (const set of projectionSets(config)) {
    const database = await openServiceDatabase(config, set);
    const pending = await database.showMigrations();
    await database.destroy();
    process.stdout.write(
      `tally migrate: ${set.service} schema is up to date${pending ? ' (pending migrations remain!)' : ''}\n`,
    );
    if (pending) return 1;
  }
  return 0;
}

/** Moves each existing stream in place; a missing one is left to `tally provision`. */
export async function migrateStreams(config: TallyConfig, say: (line: string) => void): Promise<void> {
  const nats = await connectTallyNats(config, 'tally-migrate', OPERATOR_INBOX_PREFIX);
  try {
    for (const spec of tallyStreamSpecs(nats.names, streamLimitsOf(config))) {
      const exists = await nats.jsm.streams.info(spec.name).then(
        () => true,
        () => false,
      );
      if (!exists) {
        say(`stream ${spec.name} does not exist yet (tally provision creates it)`);
        continue;
      }
      const moved = await reconcileStream(nats.jsm, spec);
      for (const warning of moved.warnings) say(`WARNING: ${warning}`);
      say(
        moved.outcome === 'updated'
          ? `stream ${spec.name} moved to the ${spec.kind} policy: ${moved.changes.join('; ')}`
          : `stream ${spec.name} already has the ${spec.kind} policy`,
      );
    }
    for (const bucket of tallyTopology(config, nats.names).buckets) await migrateBucket(nats.jsm, bucket, say);
  } finally {
    await nats.nc.close();
  }
}

/** Moves an existing bucket in place (no roll-ups, purges or deletes); a missing one is left to `tally provision`. */
async function migrateBucket(jsm: JetStreamManager, spec: KvBucketSpec, say: (line: string) => void): Promise<void> {
  if ((await inspectKvBucket(jsm, spec)) === undefined) {
    say(`KV bucket ${spec.bucket} does not exist yet (tally provision creates it)`);
    return;
  }
  const moved = await reconcileKvBucket(jsm, spec);
  say(
    moved.outcome === 'updated'
      ? `KV bucket ${spec.bucket} moved to deny roll-ups, purges and deletes: ${moved.changes.join('; ')}`
      : `KV bucket ${spec.bucket} already denies roll-ups, purges and deletes`,
  );
}
