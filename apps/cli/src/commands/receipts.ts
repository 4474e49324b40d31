// `tally receipts export|verify`: every signed receipt as JSONL, and the offline check of
// such a file (signatures with the published keys, and each capability's hash chain).
// The work itself is in ../receipts/, loaded when the command runs.
import { access } from 'node:fs/promises';
import { Command } from 'commander';
import { CliError, ExitCode, usageError } from '../cli/exit-codes.js';
import { TallyHttp } from '../cli/http.js';
import { printJson } from '../cli/output.js';
import { exitWith, globalsOf } from '../cli/program.js';
import type { ExportOptions } from '../receipts/export-receipts.js';
import type { VerifyReport } from '../receipts/verify-receipts.js';

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

export function receiptsCommand(): Command {
  const receipts = new Command('receipts').description('export signed receipts, and verify an export offline');
  receipts
    .command('export')
    .description('every signed receipt the key may read, one JSON object a line, oldest first')
    .option('--capability <id>', "only this capability's receipts")
    .option('--since <time>', 'only receipts recorded at or after this RFC 3339 time')
    .option('--out <file>', 'write to this file instead of stdout')
    .action(
      exitWith(async (options: ExportOptions, command: Command) => {
        if (options.since !== undefined && (!RFC3339.test(options.since) || Number.isNaN(Date.parse(options.since))))
          throw usageError(
            `--since ${options.since} is not an RFC 3339 time`,
            'For example --since 2026-03-01T00:00:00Z.',
          );
        const globals = globalsOf(command);
        const { exportReceipts } = await import('../receipts/export-receipts.js');
        const written = await exportReceipts(new TallyHttp(globals), options);
        if (globals.json && options.out !== undefined) printJson({ exported: written, out: options.out });
        return ExitCode.ok;
      }),
    );
  receipts
    .command('verify')
    .description('check every receipt of an export offline: signatures and hash chains (exit 1 if any is bad)')
    .argument('<file>', 'a JSONL export (tally receipts export)')
    .option('--keys <file>', 'the published keys: GET /v1/keys or /.well-known/jwks.json output (else fetched)')
    .action(
      exitWith(async (file: string, options: { keys?: string }, command: Command) => {
        const globals = globalsOf(command);
        await access(file).catch(() => {
          throw new CliError(
            `cannot read ${file}`,
            ExitCode.usage,
            'Pass the path of an export (tally receipts export --out FILE).',
          );
        });
        const { keysFromAuthority, keysFromFile } = await import('../receipts/published-keys-file.js');
        const { verifyFile } = await import('../receipts/verify-receipts.js');
        const keys =
          options.keys === undefined
            ? await keysFromAuthority(new TallyHttp(globals))
            : await keysFromFile(options.keys);
        const report = await verifyFile(file, keys);
        if (globals.json) printJson({ ok: report.bad.length === 0, ...report });
        else printReport(file, report);
        return report.bad.length === 0 ? ExitCode.ok : ExitCode.failed;
      }),
    );
  return receipts;
}

function printReport(file: string, report: VerifyReport): void {
  for (const bad of report.bad)
    process.stdout.write(`line ${bad.line}${bad.id ? ` (${bad.id})` : ''}: ${bad.reasons.join('; ')}\n`);
  const summary = `${file}: ${report.receipts} receipts in ${report.chains} chains, ${report.bad.length} bad`;
  const unchained =
    report.unchained > 0 ? ` (${report.unchained} from before the chain, checked by signature only)` : '';
  process.stdout.write(`${summary}${unchained}\n`);
}
