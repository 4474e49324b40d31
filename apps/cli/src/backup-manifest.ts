// The layout of a Tally backup (ADR 0022): a directory with one JetStream snapshot per
// stream (`<STREAM>.tar.s2`, the server's own store format) and `manifest.json`, written
// last, which names each file with its size and sha256 and the stream's configuration and
// state when the snapshot began. A directory without a manifest is an unfinished backup.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { StreamConfig, StreamState } from '@nats-io/jetstream';
import type { TallyNames } from '@tally/contracts';
import { CliError, ExitCode, usageError } from './cli/exit-codes.js';

export const MANIFEST_FILE = 'manifest.json';
export const BACKUP_FORMAT = 'tally-backup';
export const BACKUP_FORMAT_VERSION = 1;

/** Which streams a backup can hold, by the name an operator types. The ledger is the default. */
export const BACKUP_STREAM_KINDS = {
  'budget-events': (n: TallyNames) => n.budgetEventsStream,
  'work-events': (n: TallyNames) => n.workEventsStream,
  'directory-events': (n: TallyNames) => n.directoryEventsStream,
  /** Replies too large for their events (ADR 0019): the work events name them, so they go with them. */
  'work-output': (n: TallyNames) => n.workOutputStream,
  'webhook-events': (n: TallyNames) => n.webhookEventsStream,
  'work-queue': (n: TallyNames) => n.workQueueStream,
  commands: (n: TallyNames) => n.commandsStream,
  'dead-letters': (n: TallyNames) => n.deadLetterStream,
} as const;
export type BackupStreamKind = keyof typeof BACKUP_STREAM_KINDS;
/**
 * The ledger: budgets, work (with the replies its events reference), the directory
 * (tenants, operator keys, signing keys), without which tokens no longer verify, and the
 * tenants' webhook endpoints with their deliveries.
 */
export const LEDGER_STREAM_KINDS: readonly BackupStreamKind[] = [
  'budget-events',
  'work-events',
  'directory-events',
  'work-output',
  'webhook-events',
];

export interface BackupStreamEntry {
  readonly kind: BackupStreamKind;
  readonly name: string;
  readonly file: string;
  readonly bytes: number;
  readonly sha256: string;
  readonly config: StreamConfig;
  readonly state: StreamState;
}

export interface BackupManifest {
  readonly format: typeof BACKUP_FORMAT;
  readonly format_version: typeof BACKUP_FORMAT_VERSION;
  readonly created_at: string;
  readonly namespace: string;
  readonly server_version: string;
  readonly streams: readonly BackupStreamEntry[];
}

export function streamKinds(list: string): BackupStreamKind[] {
  const kinds = list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = kinds.filter((k) => !(k in BACKUP_STREAM_KINDS));
  if (unknown.length > 0 || kinds.length === 0)
    throw usageError(
      `unknown stream ${unknown.join(', ') || '(none named)'}`,
      `Name some of: ${Object.keys(BACKUP_STREAM_KINDS).join(', ')}.`,
    );
  return [...new Set(kinds)] as BackupStreamKind[];
}

/** Reads and checks a backup's manifest, then every file's size and sha256, before anything is restored. */
export async function readVerifiedManifest(dir: string): Promise<BackupManifest> {
  const path = join(dir, MANIFEST_FILE);
  if (!existsSync(path))
    throw new CliError(
      `${dir} has no ${MANIFEST_FILE}`,
      ExitCode.failed,
      'Name a directory written by tally backup; one without a manifest is an unfinished backup.',
    );
  const manifest = JSON.parse(readFileSync(path, 'utf8')) as BackupManifest;
  if (manifest.format !== BACKUP_FORMAT || manifest.format_version !== BACKUP_FORMAT_VERSION)
    throw new CliError(`${path} is not a ${BACKUP_FORMAT} v${BACKUP_FORMAT_VERSION} manifest`, ExitCode.failed);
  for (const entry of manifest.streams) {
    const file = join(dir, entry.file);
    if (!existsSync(file))
      throw new CliError(`${entry.file} (stream ${entry.name}) is missing from ${dir}`, ExitCode.failed);
    const bytes = statSync(file).size;
    const sha256 = await fileSha256(file);
    if (bytes !== entry.bytes || sha256 !== entry.sha256)
      throw new CliError(
        `${entry.file} does not match the manifest (${bytes} bytes, sha256 ${sha256}; expected ${entry.bytes}, ${entry.sha256})`,
        ExitCode.failed,
        'The backup is damaged: nothing was restored. Use another copy.',
      );
  }
  return manifest;
}

async function fileSha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
