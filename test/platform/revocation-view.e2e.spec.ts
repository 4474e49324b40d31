// Proves ADR 0049's revocation view on a real nats-server: its bucket, made as ADR 0051 makes every bucket, keeps an entry a year and takes no roll-up or purge; the view reads the revocations bucket to its end before it serves, follows new entries and deletions, skips an entry that does not decode, starts on a bucket whose entries have all aged out, makes the capability verifier refuse a token whose capability or root is revoked, and tells listeners of each revocation it learns (ADR 0054).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { CAPABILITY_TTL_SECONDS_MAX, tallyNames, type RevocationRecord, type TallyNames } from '@tally/contracts';
import { RevocationView, RevocationWriter, startDirectory } from '@tally/directory-service';
import { revocationsBucketSpec } from '@tally/platform-app';
import { ensureKvBucket, kvStreamName } from '@tally/platform-jetstream';
import { deleteNamespaceStreams, sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import { TokenMint } from '../support/auth.js';

const record = (id: string, atMs = Date.now()): RevocationRecord => ({
  capability_id: id,
  root_id: id.split('--')[0]!,
  revoked_at_ms: atMs,
  revoked_via: id,
});

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('ADR 0049: the revocation view', () => {
  let nc: NatsConnection;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  let names: TallyNames;
  const views: RevocationView[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: sharedNatsUrl() });
    js = jetstream(nc);
    jsm = await jetstreamManager(nc);
    names = tallyNames(uniqueNamespace('revview'));
  });

  afterAll(async () => {
    for (const view of views) await view.stop();
    await nc?.close();
    await deleteNamespaceStreams(sharedNatsUrl(), names.namespace);
  });

  function view(bucket: string, startTimeoutMs = 10_000): RevocationView {
    const v = new RevocationView({
      js,
      jsm,
      bucket,
      startTimeoutMs,
      restartDelayMs: 100,
      retainMs: 3_600_000,
      nowMs: () => Date.now(),
      onError: () => undefined,
    });
    views.push(v);
    return v;
  }

  it('ADR 0049 ADR 0051 the revocations bucket lives as long as the longest token and refuses roll-ups, purges and message deletes', async () => {
    await ensureKvBucket(js, revocationsBucketSpec(names, 1));
    const { config } = await jsm.streams.info(kvStreamName(names.revocationsBucket));
    expect(config).toMatchObject({
      max_age: CAPABILITY_TTL_SECONDS_MAX * 1_000 * 1_000_000,
      max_msgs_per_subject: 1,
      deny_purge: true,
      deny_delete: true,
    });
    // The server leaves a false flag out of the configuration it reports.
    expect(config.allow_rollup_hdrs ?? false).toBe(false);
  });

  it('ADR 0049 the view holds every entry written before it started, follows new ones and deletions, and skips an entry that does not decode', async () => {
    const kv = await ensureKvBucket(js, revocationsBucketSpec(names, 1));
    const writer = await RevocationWriter.open(js, names.revocationsBucket, 5_000);
    await writer.write([record('cap_before')]);
    const v = view(names.revocationsBucket);
    await v.start();
    expect(v.isRevoked('cap_before')).toBe(true);
    expect(v.isRevoked('cap_never')).toBe(false);
    await writer.write([record('cap_after'), record('cap_after--child')]);
    await until('the new entries', () => v.isRevoked('cap_after') && v.isRevoked('cap_after--child'));
    await kv.delete('cap_after');
    await until('the deletion', () => !v.isRevoked('cap_after'));
    const garbage = await kv.put('cap_garbage', new TextEncoder().encode('{"capability_id":"someone-else"}'));
    await v.waitFor(garbage, 10_000);
    expect(v.isRevoked('cap_garbage')).toBe(false);
    // A revocation older than the retention names only expired tokens.
    v.note([record('cap_ancient', Date.now() - 2 * 3_600_000)]);
    expect(v.isRevoked('cap_ancient')).toBe(false);
  });

  it('ADR 0054 the view tells its listeners of each revocation it learns, from the bucket or noted, and a listener that throws stops neither the view nor the others', async () => {
    const bucket = `${names.revocationsBucket}_HEARD`;
    await ensureKvBucket(js, { ...revocationsBucketSpec(names, 1), bucket });
    const writer = await RevocationWriter.open(js, bucket, 5_000);
    const v = view(bucket);
    await v.start();
    const heard: string[] = [];
    v.onRevoked(() => {
      throw new Error('a broken listener');
    });
    const stop = v.onRevoked((id) => heard.push(id));
    await writer.write([record('cap_heard'), record('cap_heard--child')]);
    await until('both entries heard', () => heard.length === 2);
    v.note([record('cap_noted')]);
    expect(heard).toEqual(['cap_heard', 'cap_heard--child', 'cap_noted']);
    stop();
    await writer.write([record('cap_unheard')]);
    await until('the entry after the unsubscription', () => v.isRevoked('cap_unheard'));
    expect(heard).toHaveLength(3);
  });

  it('ADR 0049 a view starts at once on a bucket whose entries have all aged out', async () => {
    const bucket = `${names.revocationsBucket}_AGED`;
    // A bucket as Tally makes it (ADR 0051), with the revocations' settings but a TTL of a second.
    await ensureKvBucket(js, { ...revocationsBucketSpec(names, 1), bucket, ttlMs: 1_000 });
    const writer = await RevocationWriter.open(js, bucket, 5_000);
    await writer.write([record('cap_aged')]);
    for (let i = 0; (await jsm.streams.info(`KV_${bucket}`)).state.messages > 0; i++) {
      if (i > 100) throw new Error('the entry never aged out');
      await new Promise((r) => setTimeout(r, 100));
    }
    const v = view(bucket, 2_000);
    await v.start();
    expect(v.isRevoked('cap_aged')).toBe(false);
    await writer.write([record('cap_fresh')]);
    await until('an entry written after the start', () => v.isRevoked('cap_fresh'));
  });

  it('ADR 0049 the capability verifier refuses a token whose capability or root is revoked, as revoked', async () => {
    await ensureKvBucket(js, revocationsBucketSpec(names, 1));
    await jsm.streams.add({ name: names.directoryEventsStream, subjects: [names.directoryEventsWildcard] });
    const directory = await startDirectory({
      js,
      jsm,
      names,
      publishTimeoutMs: 5_000,
      adminKey: undefined,
      oidc: undefined,
      staleAfterMs: 10_000,
      freshnessCheckMs: 1_000,
      keysPerTenantMax: 10,
      nowMs: () => Date.now(),
      onError: () => undefined,
    });
    try {
      const mint = await TokenMint.open(sharedNatsUrl(), names.namespace);
      const [root, child, other] = ['cap_root', 'cap_root--child', 'cap_other'].map((id) => mint.seal({ id }));
      const verify = (token: string) => directory.capabilityTokens.verify(token);
      await until('the mint key', () => directory.keys.accepts(mint.keyId));
      for (const token of [root!, child!, other!]) expect(await verify(token)).toMatchObject({ kind: 'capability' });
      await (await RevocationWriter.open(js, names.revocationsBucket, 5_000)).write([record('cap_root')]);
      await until('the revocation', () => directory.revocations.isRevoked('cap_root'));
      expect(await verify(root!)).toMatchObject({ refused: 'revoked' });
      expect(await verify(child!)).toMatchObject({ refused: 'revoked' });
      expect(await verify(other!)).toMatchObject({ kind: 'capability' });
    } finally {
      await directory.stop();
    }
  });
});
