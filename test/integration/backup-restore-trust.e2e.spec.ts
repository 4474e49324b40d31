// Proves issue 18 item 8 (ADR 0051): `tally restore` trusts nothing its backup says until the
// authority's signature over the manifest verifies, and even then reads no file outside the
// backup directory and deletes no stream the operator did not confirm. A manifest with a `../`
// path or a symlink out, one naming a stream to delete without --yes, and one edited after
// signing (or unsigned, or signed by an unknown key) are each refused with nothing written or
// deleted; the signed backup still round-trips exactly, message for message.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { headers, type NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { Ed25519Signer } from '@tally/budget-infrastructure';
import { tallyNames } from '@tally/contracts';
import { tallyStreamSpecs, toStreamConfig, type StreamLimits } from '@tally/platform-jetstream';
import { deleteNamespaceStreams, sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import { runTally } from '../cli/support/run-cli.js';

type Json = Record<string, unknown>;

const namespace = uniqueNamespace('bktrust');
const names = tallyNames(namespace);
const dir = mkdtempSync(join(tmpdir(), 'tally-backup-trust-'));
const seed = randomBytes(32).toString('base64url');
const authorityKey = Ed25519Signer.fromSeed(seed);
/** The operator's environment: this namespace, and the authority's key only (no key file or keyring of this checkout). */
const env = {
  NATS_URL: sharedNatsUrl(),
  TALLY_NAMESPACE: namespace,
  TALLY_SIGNING_KEY: seed,
  TALLY__AUTHORITY__SIGNING_KEY_PATH: join(dir, 'no-key-file'),
  TALLY_KEYRING_DIR: join(dir, 'no-keyring'),
};
const LIMITS: StreamLimits = {
  storage: 'file',
  replicas: 1,
  duplicateWindowMs: 120_000,
  maxMsgSizeBytes: 1_048_576,
  eventMaxBytes: -1,
  queueMaxBytes: 8 * 1_048_576,
  deadLetterMaxBytes: 8 * 1_048_576,
  deadLetterMaxAgeMs: 86_400_000,
};
const BACKED_UP = [names.budgetEventsStream, names.workEventsStream];
const pristine = join(dir, 'pristine');

let nc: NatsConnection;
let jsm: JetStreamManager;
let before: Json[];

beforeAll(async () => {
  nc = await connect({ servers: sharedNatsUrl() });
  jsm = await jetstreamManager(nc);
  for (const spec of tallyStreamSpecs(names, LIMITS).filter((s) => BACKED_UP.includes(s.name)))
    await jsm.streams.add(toStreamConfig(spec));
  const js = jetstream(nc);
  for (let i = 0; i < 5; i++) {
    const h = headers();
    h.set('Tally-Event-Type', 'Probe');
    await js.publish(names.budgetEventSubject(`tree-${i % 2}`), `{"n":${i}}`, { msgID: `evt-${i}`, headers: h });
  }
  before = await messages(names.budgetEventsStream);
  const backup = await runTally(['backup', '--out', pristine, '--streams', 'budget-events,work-events'], env);
  expect({ code: backup.code, stderr: backup.stderr }).toEqual({ code: 0, stderr: '' });
  // The disaster: the streams are gone; every test restores onto a server without them.
  for (const stream of BACKED_UP) await jsm.streams.delete(stream);
}, 60_000);
afterEach(async () => {
  for (const stream of BACKED_UP) await jsm.streams.delete(stream).catch(() => undefined);
});
afterAll(async () => {
  await nc?.close();
  await deleteNamespaceStreams(sharedNatsUrl(), namespace);
  rmSync(dir, { recursive: true, force: true });
});

/** Every message of a stream: sequence, subject, data and headers. */
async function messages(stream: string): Promise<Json[]> {
  const { state } = await jsm.streams.info(stream);
  const out: Json[] = [];
  for (let seq = state.first_seq; state.messages > 0 && seq <= state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq });
    out.push({ seq: m!.seq, subject: m!.subject, data: m!.string(), headers: m!.header.toString(), at: m!.time });
  }
  return out;
}

/** A copy of the signed backup to tamper with; `edit` changes its manifest, re-signed by the authority when `resign`. */
function copyOfBackup(name: string, edit?: (manifest: Json) => void, resign = false): string {
  const copy = join(dir, name, 'backup');
  mkdirSync(join(dir, name), { recursive: true });
  cpSync(pristine, copy, { recursive: true });
  if (edit) {
    const manifest = JSON.parse(readFileSync(join(copy, 'manifest.json'), 'utf8')) as Json;
    edit(manifest);
    if (resign) sign(manifest, authorityKey);
    writeFileSync(join(copy, 'manifest.json'), JSON.stringify(manifest, null, 2));
  }
  return copy;
}

/** What the authority's key does at backup: the signature covers every other field, key_id included. */
function sign(manifest: Json, key: Ed25519Signer): void {
  delete manifest['signature'];
  manifest['key_id'] = key.keyId;
  manifest['signature'] = key.sign(manifest);
}

const budgetEntry = (manifest: Json) => (manifest['streams'] as Json[])[0]!;

/** Nothing was written: neither backed-up stream exists. */
async function nothingRestored(): Promise<boolean[]> {
  return Promise.all(
    BACKED_UP.map((s) =>
      jsm.streams.info(s).then(
        () => true,
        () => false,
      ),
    ),
  );
}

describe('ADR 0051: a restore that trusts nothing', () => {
  it('ADR 0051 the signed backup restores exactly: same sequences, subjects, data, headers and timestamps', async () => {
    const manifest = JSON.parse(readFileSync(join(pristine, 'manifest.json'), 'utf8')) as Json;
    expect(manifest).toMatchObject({ format_version: 2, key_id: authorityKey.keyId });
    const restored = await runTally(['restore', '--from', pristine], env);
    expect({ code: restored.code, stderr: restored.stderr }).toEqual({ code: 0, stderr: '' });
    expect(await messages(names.budgetEventsStream)).toEqual(before);
    expect((await jsm.streams.info(names.budgetEventsStream)).config).toMatchObject({
      deny_delete: true,
      deny_purge: true,
    });
  }, 60_000);

  it('ADR 0051 a manifest whose file climbs out with ../ is refused, even signed, and nothing is written', async () => {
    const copy = copyOfBackup(
      'climbs-out',
      (m) => (budgetEntry(m)['file'] = `../outside/${names.budgetEventsStream}.tar.s2`),
      true,
    );
    mkdirSync(join(dir, 'climbs-out', 'outside'));
    renameSync(
      join(copy, `${names.budgetEventsStream}.tar.s2`),
      join(dir, 'climbs-out', 'outside', `${names.budgetEventsStream}.tar.s2`),
    );
    const refused = await runTally(['restore', '--from', copy], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('is not inside the backup directory');
    expect(await nothingRestored()).toEqual([false, false]);
  }, 60_000);

  it('ADR 0051 a snapshot file that is a symlink out of the backup directory is refused, and nothing is written', async () => {
    const copy = copyOfBackup('symlinked');
    const file = `${names.budgetEventsStream}.tar.s2`;
    const outside = join(dir, 'symlinked', file);
    renameSync(join(copy, file), outside);
    symlinkSync(outside, join(copy, file));
    const refused = await runTally(['restore', '--from', copy], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('outside the backup directory');
    expect(await nothingRestored()).toEqual([false, false]);
  }, 60_000);

  it('ADR 0051 a stream the restore would delete is refused, named, without --yes; with --yes it is replaced', async () => {
    // A service booted before the restore and created the budget stream, empty.
    const spec = tallyStreamSpecs(names, LIMITS).find((s) => s.name === names.budgetEventsStream)!;
    await jsm.streams.add(toStreamConfig(spec));
    const refused = await runTally(['restore', '--from', pristine], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${names.budgetEventsStream} already exists, empty`);
    expect(refused.stderr).toContain('not confirmed: nothing was restored');
    expect((await jsm.streams.info(names.budgetEventsStream)).state.messages).toBe(0);
    expect(await nothingRestored()).toEqual([true, false]);

    const confirmed = await runTally(['restore', '--from', pristine, '--yes'], env);
    expect({ code: confirmed.code, stderr: confirmed.stderr }).toEqual({ code: 0, stderr: '' });
    expect(await messages(names.budgetEventsStream)).toEqual(before);
  }, 60_000);

  it('ADR 0051 a manifest edited after signing, unsigned, or signed by an unknown key is refused, and nothing is written', async () => {
    const cases: [string, string, (m: Json) => void][] = [
      // Lifting the ledger's protection in the configuration the restore would apply.
      [
        'edited',
        'the manifest was changed after signing',
        (m) => Object.assign(budgetEntry(m)['config'] as Json, { deny_delete: false, deny_purge: false }),
      ],
      [
        'unsigned',
        'it is not signed',
        (m) => {
          delete m['signature'];
          delete m['key_id'];
        },
      ],
      ['foreign', 'which is not among the authority keys on this machine', (m) => sign(m, Ed25519Signer.generate())],
    ];
    for (const [name, reason, edit] of cases) {
      const refused = await runTally(['restore', '--from', copyOfBackup(name, edit)], env);
      expect({ name, code: refused.code, refused: refused.stderr.includes(reason) }).toEqual({
        name,
        code: 1,
        refused: true,
      });
      expect(refused.stderr).toContain('cannot be trusted');
      expect(await nothingRestored()).toEqual([false, false]);
    }
  }, 120_000);

  it('ADR 0051 a backup without the authority key refuses before it writes anything', async () => {
    const out = join(dir, 'unsigned-backup');
    const refused = await runTally(['backup', '--out', out], { ...env, TALLY_SIGNING_KEY: undefined });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("signs its manifest with the authority's signing key");
    expect(() => readFileSync(join(out, 'manifest.json'))).toThrow(/ENOENT/);
  }, 60_000);
});
