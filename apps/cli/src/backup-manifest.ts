// The layout of a Tally backup (ADR 0022): a directory with one JetStream snapshot per
// stream (`<STREAM>.tar.s2`, the server's own store format) and `manifest.json`, written
// last, which names each file with its size and sha256 and the stream's configuration and
// state when the snapshot began, signed by the authority's key (ADR 0051). A directory
// without a manifest is an unfinished backup.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
import type { StreamConfig, StreamState } from '@nats-io/jetstream';
import { tallyNames, type TallyNames } from '@tally/contracts';
import { manifestSignatureProblem, type ManifestSignature, type TrustedKeys } from './backup-signature.js';
import { CliError, ExitCode, usageError } from './cli/exit-codes.js';

export const MANIFEST_FILE = 'manifest.json';
export const BACKUP_FORMAT = 'tally-backup';
/** 2: the manifest is signed (ADR 0051); a restore refuses version 1, which was not. */
export const BACKUP_FORMAT_VERSION = 2;

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

export interface UnsignedBackupManifest {
  readonly format: typeof BACKUP_FORMAT;
  readonly format_version: typeof BACKUP_FORMAT_VERSION;
  readonly created_at: string;
  readonly namespace: string;
  readonly server_version: string;
  readonly streams: readonly BackupStreamEntry[];
}

export type BackupManifest = UnsignedBackupManifest & ManifestSignature;

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

/** A manifest whose signature, streams and paths were checked: each entry with the real path of its file. */
export interface VerifiedBackup {
  readonly manifest: BackupManifest;
  readonly files: ReadonlyMap<string, string>;
}

/**
 * Reads a backup's manifest and trusts nothing in it until a trusted key's signature over it
 * verifies; then checks that each entry names its kind's stream of the manifest's namespace,
 * that each file lies inside the directory (no `..`, no absolute path, no symlink out of it),
 * and each file's size and sha256. All before anything is restored.
 */
export async function readVerifiedManifest(dir: string, trusted: TrustedKeys): Promise<VerifiedBackup> {
  if (!existsSync(join(dir, MANIFEST_FILE)))
    throw new CliError(
      `${dir} has no ${MANIFEST_FILE}`,
      ExitCode.failed,
      'Name a directory written by tally backup; one without a manifest is an unfinished backup.',
    );
  const path = containedFile(dir, MANIFEST_FILE);
  const parsed = parseManifest(readFileSync(path, 'utf8'), path);
  const problem = manifestSignatureProblem(parsed, trusted);
  if (problem !== undefined) throw new CliError(`${path} cannot be trusted: ${problem}`, ExitCode.failed, REFUSED_HINT);
  const manifest = parsed as unknown as BackupManifest;
  if (manifest.format_version !== BACKUP_FORMAT_VERSION)
    throw new CliError(`${path} is not a ${BACKUP_FORMAT} v${BACKUP_FORMAT_VERSION} manifest`, ExitCode.failed);
  const files = new Map<string, string>();
  for (const entry of manifest.streams) {
    assertEntry(entry, manifest.namespace, files);
    const file = containedFile(dir, entry.file, `stream ${entry.name}`);
    const bytes = statSync(file).size;
    const sha256 = await fileSha256(file);
    if (bytes !== entry.bytes || sha256 !== entry.sha256)
      throw new CliError(
        `${entry.file} does not match the manifest (${bytes} bytes, sha256 ${sha256}; expected ${entry.bytes}, ${entry.sha256})`,
        ExitCode.failed,
        'The backup is damaged: nothing was restored. Use another copy.',
      );
    files.set(entry.name, file);
  }
  return { manifest, files };
}

const REFUSED_HINT = 'Nothing was restored. Use a copy whose manifest the authority signed (ADR 0051).';

function parseManifest(text: string, path: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const manifest = parsed as Record<string, unknown> | undefined;
  if (manifest?.['format'] !== BACKUP_FORMAT || !Array.isArray(manifest['streams']))
    throw new CliError(`${path} is not a ${BACKUP_FORMAT} manifest`, ExitCode.failed);
  return manifest;
}

/** A signed entry still names only its kind's stream of this namespace, once, restored under that name. */
function assertEntry(entry: BackupStreamEntry, namespace: string, seen: ReadonlyMap<string, string>): void {
  let bad: string | undefined;
  try {
    bad = entryProblem(entry, namespace, seen);
  } catch (error) {
    bad = (error as Error).message; // a namespace that names no streams
  }
  if (bad !== undefined) throw new CliError(`the manifest is not one tally backup writes: ${bad}`, ExitCode.failed);
}

function entryProblem(entry: BackupStreamEntry, namespace: string, seen: ReadonlyMap<string, string>) {
  if (!Object.hasOwn(BACKUP_STREAM_KINDS, entry.kind))
    return `kind ${String(entry.kind)} is not a stream a backup holds`;
  const stream = BACKUP_STREAM_KINDS[entry.kind](tallyNames(namespace));
  if (entry.name !== stream || entry.config?.name !== stream)
    return (
      `a ${entry.kind} entry must name ${stream}, ` + `not ${String(entry.name)} (config ${String(entry.config?.name)})`
    );
  if (seen.has(stream)) return `${stream} is named twice`;
  if (typeof entry.file !== 'string' || !/^[0-9a-f]{64}$/.test(String(entry.sha256)))
    return `${stream} has no file or sha256`;
  return undefined;
}

/**
 * The real path of `file`, which must lie inside `dir`: a relative path without `..`, that does
 * not resolve (through a symlink anywhere on the way) outside the directory's own real path,
 * and is a regular file. The restore reads this path, never the name again.
 */
export function containedFile(dir: string, file: string, what = file): string {
  const refuse = (why: string) =>
    new CliError(`${what}: ${JSON.stringify(file)} ${why}`, ExitCode.failed, 'Nothing was restored.');
  if (typeof file !== 'string' || file === '' || file.includes('\0')) throw refuse('is not a file name');
  if (isAbsolute(file) || file.split(/[\\/]/).includes('..'))
    throw refuse('is not inside the backup directory (absolute, or climbing out with ..)');
  const root = realpathSync(dir);
  const path = join(root, file);
  if (!existsSync(path)) throw new CliError(`${file} (${what}) is missing from ${dir}`, ExitCode.failed);
  const real = realpathSync(path);
  const inside = relative(root, real);
  if (inside === '' || inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside))
    throw refuse(`resolves to ${real}, outside the backup directory ${root}`);
  if (!statSync(real).isFile()) throw refuse('is not a regular file');
  return real;
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
