// `tally audit work <id>` and `tally audit capability <id>`: the timeline an auditor reads,
// as tables for people or JSON (--json). The work is in ../audit/, loaded when a command runs.
import { Command } from 'commander';
import { ExitCode, usageError } from '../cli/exit-codes.js';
import { TallyHttp } from '../cli/http.js';
import { printFields, printHeading, printJson, printTable } from '../cli/output.js';
import { exitWith, globalsOf } from '../cli/program.js';
import type { CapabilityAudit } from '../audit/capability-audit.js';
import type { WorkAudit } from '../audit/work-audit.js';

const ID = /^[A-Za-z0-9_:.-]{1,128}$/;

function checkedId(id: string, what: string): string {
  if (!ID.test(id)) throw usageError(`${JSON.stringify(id)} is not a ${what} id`, `Pass the id the API returned.`);
  return id;
}

export function auditCommand(): Command {
  const audit = new Command('audit').description('timelines for audits: a work unit, or a capability');
  audit
    .command('work')
    .description("a work unit's timeline: submission, each attempt with its admission, hold and settlement, the end")
    .argument('<id>', 'the work id')
    .action(
      exitWith(async (id: string, _options: unknown, command: Command) => {
        const globals = globalsOf(command);
        const { auditWork } = await import('../audit/work-audit.js');
        const report = await auditWork(new TallyHttp(globals), checkedId(id, 'work'));
        if (globals.json) printJson(report);
        else printWork(report);
        return ExitCode.ok;
      }),
    );
  audit
    .command('capability')
    .description("a capability's timeline, holds, receipts, usage per grant and the check of its receipt chain")
    .argument('<id>', 'the capability id')
    .action(
      exitWith(async (id: string, _options: unknown, command: Command) => {
        const globals = globalsOf(command);
        const { auditCapability } = await import('../audit/capability-audit.js');
        const report = await auditCapability(new TallyHttp(globals), checkedId(id, 'capability'));
        if (globals.json) printJson(report);
        else printCapability(report);
        return report.chain.ok ? ExitCode.ok : ExitCode.failed;
      }),
    );
  return audit;
}

function printWork(r: WorkAudit): void {
  printFields([
    ['work', r.work_id],
    ['status', r.status],
    ['session', r.session_id],
    ['purpose', r.purpose],
    ['metered', r.metered],
    ['cost', `${r.cost_units}${r.currency ? ` ${r.currency}` : ''} (minor units)`],
    ...(r.error ? ([['error', r.error]] as const) : []),
  ]);
  printHeading('Timeline');
  printTable(
    ['at', 'event', 'detail'],
    r.timeline.map((e) => [String(e['at']), String(e['type']), eventDetail(e)]),
  );
  printHeading('Attempts');
  printTable(
    ['#', 'reason', 'provider/model', 'admission', 'domain', 'settlement', 'ms', 'tokens in/out', 'hold', 'cost'],
    r.attempts.map((a) => [
      a.ordinal,
      a.reason,
      a.provider ? `${a.provider}/${a.model}` : null,
      a.admission ? `${a.admission.verdict}${a.admission.reason ? ` (${a.admission.reason})` : ''}` : null,
      a.domain,
      a.settlement,
      a.latency_ms,
      a.input_tokens === null ? null : `${a.input_tokens}/${a.output_tokens}`,
      a.hold_outcome,
      a.cost_units ?? (a.hold_cost_units ? `${a.hold_cost_units} (held)` : null),
    ]),
  );
  printHeading('Receipts');
  const receipts = r.attempts.flatMap((a) =>
    [a.admission, a.settlement_receipt].flatMap((x) => (x ? [[a.ordinal, x] as const] : [])),
  );
  if (r.receipts_note) process.stdout.write(`${r.receipts_note}\n`);
  else
    printTable(
      ['#', 'kind', 'verdict', 'settlement', 'chain', 'issued at', 'receipt'],
      receipts.map(([ordinal, x]) => [ordinal, x.kind, x.verdict, x.settlement, x.chain_index, x.issued_at, x.id]),
    );
}

/** The facts of one work event worth a column: never its content (the timeline carries none). */
function eventDetail(e: Record<string, unknown>): string {
  const parts: string[] = [];
  const add = (label: string, key: string) => {
    if (e[key] !== undefined && e[key] !== null && e[key] !== '') parts.push(`${label}${String(e[key])}`);
  };
  if (e['type'] === 'WorkSubmitted') {
    const route = (e['route'] ?? []) as { provider?: string; model?: string }[];
    parts.push(`route ${route.map((l) => `${l.provider}/${l.model}`).join(' > ')}`);
    add('messages ', 'messages_count');
    add('via ', 'entrypoint');
  }
  add('#', 'ordinal');
  add('', 'reason');
  if (e['type'] === 'AttemptStarted') parts.push(`${e['provider']}/${e['model']}`, `hold ${e['hold_cost_units']}`);
  add('', 'domain');
  add('', 'settlement');
  add('', 'outcome');
  add('cost ', 'cost_units');
  add('', 'code');
  add('winner #', 'winning_attempt');
  add('', 'error');
  return parts.join(', ');
}

function printCapability(r: CapabilityAudit): void {
  const c = r.capability;
  printFields([
    ['capability', String(c['id'])],
    ['tree', String(c['root_id'])],
    ['parent', c['parent_id'] as string | null],
    ['issued', c['issued_at'] as string],
    ['expires', c['expires_at'] as string],
    ['revoked', (c['revoked_at'] as string | null) ?? 'no'],
    ['children', ((c['children'] ?? []) as string[]).join(', ') || null],
  ]);
  printHeading('Usage per grant');
  printTable(
    ['grant', 'invocations', 'exposed', 'realized', 'committed', 'currency', 'period'],
    r.usage.map((g) => [
      g['grant_index'] as number,
      g['invocation_count'] as number,
      String(g['exposed_cost_units']),
      String(g['realized_cost_units']),
      String(g['committed_cost_units']),
      g['currency'] as string | null,
      g['period_start'] ? `${g['period_start']} – ${g['period_end']}` : null,
    ]),
  );
  printHeading('Timeline');
  printTable(
    ['at', 'what', 'detail'],
    r.timeline.map((e) => [e.at, e.what, e.detail]),
  );
  printHeading('Holds');
  printTable(
    ['hold', 'grant', 'status', 'exposure', 'expires'],
    r.holds.map((h) => [
      String(h['hold_id']),
      h['grant_index'] as number,
      String(h['status']),
      String(h['exposure_units']),
      String(h['expires_at']),
    ]),
  );
  printHeading('Ambiguities');
  printTable(
    ['ambiguity', 'kind', 'hold', 'resolution'],
    r.ambiguities.map((a) => [
      String(a['ambiguity_id']),
      String(a['kind']),
      String(a['hold_id']),
      (a['resolution'] as string | null) ?? 'open',
    ]),
  );
  printHeading('Receipt chain');
  for (const bad of r.chain.bad)
    process.stdout.write(`receipt ${bad.line}${bad.id ? ` (${bad.id})` : ''}: ${bad.reasons.join('; ')}\n`);
  const unchained = r.chain.unchained > 0 ? `, ${r.chain.unchained} from before the chain (signature only)` : '';
  process.stdout.write(
    `${r.chain.ok ? 'intact' : 'BROKEN'}: ${r.chain.receipts} receipts, signatures and hash links checked${unchained}\n`,
  );
}
