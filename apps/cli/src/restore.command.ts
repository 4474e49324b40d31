// `tally restore --from DIR [--replicas N] [--keys FILE] [--yes] [--json]`: puts the streams of
// a backup back on a NATS server where they are missing (after a lost store, or onto a new
// cluster), exactly as they were: same sequences, subjects, headers, event ids and timestamps,
// so a replay gives the same projections and the same signed receipts (ADR 0022,
// docs/operations.md). It trusts the backup only once the authority's signature over its
// manifest verifies, reads no file outside the directory, and deletes an existing (empty)
// stream only when the operator confirms (ADR 0051). Stop the services first; run
// `tally replay` for each service afterwards.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import type { StreamConfig, StreamState } from '@nats-io/jetstream';
import { JetStreamApiError } from '@nats-io/jetstream';
import type { TallyConfig } from '@tally/platform-app';

// The command definition loads config through here, so the CLI imports the platform
// library only when a command runs.
export { loadConfig } from '@tally/platform-app';
import { restoreStream } from '@tally/platform-jetstream';
import { CliError, ExitCode, usageError } from './cli/exit-codes.js';
import { formatBytes, readVerifiedManifest, type BackupManifest, type BackupStreamEntry } from './backup-manifest.js';
import { trustedKeysOf } from './backup-signature.js';
import { connectOperatorNats, type OperatorNats } from './operator-nats.js';

export interface RestoreOptions {
  readonly from: string;
  /** Restore onto a cluster of another size: the streams' replica count (default: as backed up). */
  readonly replicas?: number;
  /** Published keys (GET /v1/keys or the JWKS, saved) to check the signature with, not this machine's keyring. */
  readonly keys?: string;
  /** Deletes the existing empty streams the backup replaces without asking. */
  readonly yes: boolean;
  readonly json: boolean;
}

const RESTORE_LIMITS = { apiTimeoutMs: 30_000, chunkTimeoutMs: 30_000, finishTimeoutMs: 300_000 } as const;
const READ_CHUNK_BYTES = 256 * 1024;
const STREAM_NOT_FOUND = 10059;

export async function runRestore(options: RestoreOptions, config: TallyConfig): Promise<number> {
  const { manifest, files } = await readVerifiedManifest(options.from, await trustedKeysOf(config, options.keys));
  if (manifest.namespace !== config.nats.namespace)
    throw usageError(
      `the backup is of namespace ${manifest.namespace}, but this configuration uses ${config.nats.namespace}`,
      "Set TALLY_NAMESPACE to the backup's namespace: the services would not find the restored streams otherwise.",
    );
  const nats = await connectOperatorNats(config, 'tally-restore');
  try {
    // Every stream is checked before any is restored, so a refusal leaves the server as it was.
    const empty: string[] = [];
    for (const entry of manifest.streams) if (await checkAbsentOrEmpty(nats, entry)) empty.push(entry.name);
    if (empty.length > 0) await confirmDeletion(empty, options.yes);
    const restored: { entry: BackupStreamEntry; state: StreamState }[] = [];
    for (const entry of manifest.streams) {
      // An empty stream (a service booted before the restore) holds nothing to lose, and the operator said so.
      if (empty.includes(entry.name)) await nats.jsm.streams.delete(entry.name);
      const chunks = chunksOf(files.get(entry.name)!, entry);
      const state = await restoreStream(nats.nc, snapshotOf(entry, options), chunks, { ...RESTORE_LIMITS });
      assertSameState(entry, state);
      restored.push({ entry, state });
      if (!options.json)
        process.stdout.write(
          `${entry.kind.padEnd(14)} ${entry.name}: ${state.messages} messages (sequences ${state.first_seq}..${state.last_seq}), ${formatBytes(entry.bytes)} restored\n`,
        );
    }
    process.stdout.write(options.json ? `${JSON.stringify(summary(manifest, restored))}\n` : nextSteps(manifest));
    return 0;
  } finally {
    await nats.close();
  }
}

/** True when the stream exists but is empty; throws when it holds messages. */
async function checkAbsentOrEmpty(nats: OperatorNats, entry: BackupStreamEntry): Promise<boolean> {
  try {
    const info = await nats.jsm.streams.info(entry.name);
    if (info.state.messages === 0) return true;
    throw new CliError(
      `${entry.name} already exists with ${info.state.messages} messages (sequences ${info.state.first_seq}..${info.state.last_seq}); restore never overwrites events`,
      ExitCode.failed,
      'Restore onto a server without it, or delete the stream deliberately first.',
    );
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND) return false;
    throw error;
  }
}

function snapshotOf(entry: BackupStreamEntry, options: RestoreOptions): { config: StreamConfig; state: StreamState } {
  const config = options.replicas === undefined ? entry.config : { ...entry.config, num_replicas: options.replicas };
  return { config, state: entry.state };
}

/**
 * Deleting a stream is the one irreversible step of a restore: only with --yes, or when the
 * operator answers yes at a terminal. Otherwise refused, naming each stream, before anything changes.
 */
async function confirmDeletion(streams: readonly string[], yes: boolean): Promise<void> {
  const one = streams.length === 1;
  const what = `${streams.join(', ')} already exist${one ? 's' : ''}, empty; restoring replaces (deletes) ${one ? 'it' : 'them'}`;
  if (yes) return;
  if (process.stdin.isTTY) {
    const prompt = createInterface({ input: process.stdin, output: process.stderr });
    const answer = await prompt.question(`${what}. Delete and restore? [y/N] `).finally(() => prompt.close());
    if (/^y(es)?$/i.test(answer.trim())) return;
  }
  throw new CliError(
    `${what}, and that was not confirmed: nothing was restored`,
    ExitCode.failed,
    'Run it again with --yes to delete them, or delete them yourself first (nats stream rm).',
  );
}

/**
 * The snapshot's chunks, hashed as they are sent: a file changed since the manifest was checked
 * ends the restore before its last (committing) message, so the server never creates the stream.
 */
async function* chunksOf(file: string, entry: BackupStreamEntry): AsyncIterable<Uint8Array> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file, { highWaterMark: READ_CHUNK_BYTES })) {
    hash.update(chunk as Buffer);
    yield chunk as Buffer;
  }
  const sha256 = hash.digest('hex');
  if (sha256 !== entry.sha256)
    throw new CliError(
      `${entry.file} changed during the restore (sha256 ${sha256}, expected ${entry.sha256})`,
      ExitCode.failed,
    );
}

/** The restored stream must be the one that was backed up, message for message. */
function assertSameState(entry: BackupStreamEntry, state: StreamState): void {
  const keys = ['messages', 'bytes', 'first_seq', 'last_seq', 'num_subjects'] as const;
  // An empty stream reports first_seq 0 when backed up and 1 once restored: both mean "none".
  const empty = state.messages === 0 && entry.state.messages === 0;
  const differ = keys.filter((k) => state[k] !== entry.state[k] && !(empty && k === 'first_seq'));
  if (differ.length > 0)
    throw new CliError(
      `${entry.name} restored with a different state: ${differ.map((k) => `${k} ${state[k]} instead of ${entry.state[k]}`).join(', ')}`,
      ExitCode.failed,
    );
}

function summary(manifest: BackupManifest, restored: { entry: BackupStreamEntry; state: StreamState }[]) {
  return {
    backup_created_at: manifest.created_at,
    namespace: manifest.namespace,
    streams: restored.map(({ entry, state }) => ({ kind: entry.kind, name: entry.name, state })),
  };
}

function nextSteps(manifest: BackupManifest): string {
  return (
    `restore complete: the ledger as of ${manifest.created_at}.\n` +
    "Next: rebuild each service's projections from it with `tally replay --service budget-authority` and " +
    '`tally replay --service agent-orchestrator`, then start the services.\n'
  );
}
