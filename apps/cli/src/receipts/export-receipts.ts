// `tally receipts export`: every signed receipt the key may read, oldest first, one JSON
// object a line, fetched a page at a time (GET /v1/receipts?after=…) with a progress bar.
// Each line is the receipt exactly as served, which is what the next receipt's prev_hash
// covers (ADR 0030), so the file verifies as it is.
import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { CliError, ExitCode } from '../cli/exit-codes.js';
import type { TallyHttp } from '../cli/http.js';
import { progressBar } from '../cli/progress.js';

/** The authority's page limit: the fewest round trips. */
export const EXPORT_PAGE_SIZE = 1_000;
/** A bound on the loop: far above any page count an export of a real ledger needs at 1,000 a page. */
const PAGES_MAX = 10_000_000;

export interface ExportOptions {
  readonly capability?: string;
  readonly since?: string;
  readonly out?: string;
}

interface ReceiptsPage {
  readonly receipts: readonly Record<string, unknown>[];
  readonly next_after: string | null;
  readonly total?: number;
}

export async function exportReceipts(http: TallyHttp, options: ExportOptions): Promise<number> {
  const sink = options.out === undefined ? process.stdout : await openOut(options.out);
  const bar = progressBar('receipts export', { unit: 'receipts' });
  let written = 0;
  let total = 0;
  let after: string | null = null;
  try {
    for (let page = 0; page < PAGES_MAX; page++) {
      const body: ReceiptsPage = await http.get<ReceiptsPage>('authority', `/v1/receipts?${query(options, after)}`);
      if (body.total !== undefined) total = body.total;
      const text = body.receipts.map((r) => `${JSON.stringify(r)}\n`).join('');
      if (text !== '' && !sink.write(text)) await once(sink, 'drain');
      written += body.receipts.length;
      bar.update(written, Math.max(total, written));
      after = body.next_after;
      if (after === null) break;
    }
  } finally {
    bar.finish(`${written} receipts${options.out === undefined ? '' : ` written to ${options.out}`}`);
    if (sink !== process.stdout) await closeOut(sink as WriteStream);
  }
  return written;
}

function query(options: ExportOptions, after: string | null): string {
  const params = new URLSearchParams({ limit: String(EXPORT_PAGE_SIZE) });
  if (options.capability !== undefined) params.set('capability_id', options.capability);
  if (options.since !== undefined) params.set('since', options.since);
  if (after !== null) params.set('after', after);
  return params.toString();
}

async function openOut(path: string): Promise<WriteStream> {
  const stream = createWriteStream(path, { flags: 'w', mode: 0o644 });
  try {
    await once(stream, 'open');
  } catch (error) {
    throw new CliError(
      `cannot write ${path}: ${(error as Error).message}`,
      ExitCode.failed,
      'Pass a writable --out FILE.',
    );
  }
  return stream;
}

async function closeOut(stream: WriteStream): Promise<void> {
  stream.end();
  await once(stream, 'finish');
}
