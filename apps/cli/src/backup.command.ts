// `tally backup --out DIR [--streams budget-events,work-events,directory-events,...] [--key-id ID] [--json]`:
// a JetStream snapshot of each ledger stream into a new directory, then a manifest with every
// file's size and sha256, signed with the authority's signing key (ADR 0022, ADR 0051,
// docs/operations.md). The services may keep running: a snapshot is a consistent copy of the
// stream as it was when it began.
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { tallyNames } from '@tally/contracts';
import type { TallyConfig } from '@tally/platform-app';

// The command definition loads config through here, so the CLI imports the platform
// library only when a command runs.
export { loadConfig } from '@tally/platform-app';
import { snapshotStream } from '@tally/platform-jetstream';
import {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  BACKUP_STREAM_KINDS,
  formatBytes,
  MANIFEST_FILE,
  type BackupStreamEntry,
  type BackupStreamKind,
  type UnsignedBackupManifest,
} from './backup-manifest.js';
import { backupSignerOf, signManifest } from './backup-signature.js';
import { usageError } from './cli/exit-codes.js';
import { connectOperatorNats, OPERATOR_INBOX_PREFIX, type OperatorNats } from './operator-nats.js';

export interface BackupOptions {
  readonly out: string;
  readonly streams: readonly BackupStreamKind[];
  /** The keyring key that signs the manifest; by default the configuration's boot key. */
  readonly keyId?: string;
  readonly json: boolean;
}

/** Chunks of 256 KiB: well under any server's max_payload, few enough round trips for large stores. */
const SNAPSHOT_LIMITS = { chunkBytes: 256 * 1024, apiTimeoutMs: 30_000, idleTimeoutMs: 60_000 } as const;

export async function runBackup(options: BackupOptions, config: TallyConfig): Promise<number> {
  if (existsSync(options.out) && readdirSync(options.out).length > 0)
    throw usageError(
      `${options.out} is not empty`,
      'A backup never overwrites another: name a new or empty directory.',
    );
  // Before any snapshot: a backup that could not be signed would be refused by every restore.
  const signer = backupSignerOf(config, options.keyId);
  const names = tallyNames(config.nats.namespace);
  const nats = await connectOperatorNats(config, 'tally-backup');
  try {
    mkdirSync(options.out, { recursive: true });
    const entries: BackupStreamEntry[] = [];
    for (const kind of options.streams) {
      const entry = await backupStream(nats, kind, BACKUP_STREAM_KINDS[kind](names), options.out);
      entries.push(entry);
      if (!options.json)
        process.stdout.write(
          `${kind.padEnd(14)} ${entry.name}: ${entry.state.messages} messages (sequences ${entry.state.first_seq}..${entry.state.last_seq}), ${formatBytes(entry.bytes)}, sha256 ${entry.sha256.slice(0, 16)}…\n`,
        );
    }
    const unsigned: UnsignedBackupManifest = {
      format: BACKUP_FORMAT,
      format_version: BACKUP_FORMAT_VERSION,
      created_at: new Date().toISOString(),
      namespace: names.namespace,
      server_version: nats.nc.info?.version ?? 'unknown',
      streams: entries,
    };
    const manifest = signManifest(unsigned, signer);
    // Written last and renamed into place: a directory with a manifest is a complete backup.
    const tmp = join(options.out, `${MANIFEST_FILE}.tmp`);
    writeFileSync(tmp, `${JSON.stringify(manifest, null, 2)}\n`);
    renameSync(tmp, join(options.out, MANIFEST_FILE));
    process.stdout.write(
      options.json ? `${JSON.stringify(manifest)}\n` : `backup complete: ${join(options.out, MANIFEST_FILE)}\n`,
    );
    return 0;
  } finally {
    await nats.close();
  }
}

async function backupStream(
  nats: OperatorNats,
  kind: BackupStreamKind,
  stream: string,
  dir: string,
): Promise<BackupStreamEntry> {
  const file = `${stream}.tar.s2`;
  const out = createWriteStream(join(dir, file), { flags: 'wx' });
  const hash = createHash('sha256');
  let bytes = 0;
  try {
    const info = await snapshotStream(
      nats.nc,
      stream,
      async (chunk) => {
        hash.update(chunk);
        bytes += chunk.length;
        if (!out.write(chunk)) await once(out, 'drain');
      },
      { ...SNAPSHOT_LIMITS, inboxPrefix: OPERATOR_INBOX_PREFIX },
    );
    out.end();
    await once(out, 'finish');
    return { kind, name: stream, file, bytes, sha256: hash.digest('hex'), config: info.config, state: info.state };
  } catch (error) {
    out.destroy();
    throw error;
  }
}
