// `tally audit work <id>`: a work unit's timeline from the orchestrator's ledger (GET
// /v1/work/{id}/events), each attempt with its admission, hold, outcome and settlement, and
// the authority's signed receipts of every attempt (by the request id the worker admits
// with, `<work>:attempt:<ordinal>`), with the costs. A unit run unmetered, or an authority
// that cannot be reached, still gets its timeline: the receipts part says why it is empty.
import { CliError, ExitCode } from '../cli/exit-codes.js';
import type { TallyHttp } from '../cli/http.js';

type Json = Record<string, unknown>;

export interface AttemptAudit {
  readonly ordinal: number;
  readonly reason: string | null;
  readonly provider: string | null;
  readonly model: string | null;
  readonly hold_id: string | null;
  readonly hold_cost_units: string | null;
  readonly started_at: string | null;
  readonly settled_at: string | null;
  readonly domain: string | null;
  readonly settlement: string | null;
  readonly latency_ms: number | null;
  readonly input_tokens: number | null;
  readonly output_tokens: number | null;
  readonly error: string | null;
  readonly hold_outcome: string | null;
  readonly cost_units: string | null;
  readonly admission: ReceiptSummary | null;
  readonly settlement_receipt: ReceiptSummary | null;
}

export interface ReceiptSummary {
  readonly id: string;
  readonly kind: string;
  readonly verdict: string;
  readonly reason: string | null;
  readonly settlement: string | null;
  readonly issued_at: string;
  readonly chain_index: number | null;
}

export interface WorkAudit {
  readonly work_id: string;
  readonly status: string;
  readonly session_id: string | null;
  readonly purpose: string | null;
  readonly metered: boolean | null;
  readonly error: string | null;
  readonly timeline: readonly Json[];
  readonly attempts: readonly AttemptAudit[];
  readonly conclusion: Json | null;
  readonly cost_units: string;
  readonly currency: string | null;
  /** Why the authority's receipts are missing, when they are. */
  readonly receipts_note: string | null;
}

const CONCLUSIONS = new Set(['WorkCompleted', 'WorkFailed', 'WorkAborted']);

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);

export async function auditWork(http: TallyHttp, workId: string): Promise<WorkAudit> {
  const status = await http.get<Json>('orchestrator', `/v1/work/${encodeURIComponent(workId)}`);
  const { events } = await http.get<{ events: Json[] }>(
    'orchestrator',
    `/v1/work/${encodeURIComponent(workId)}/events`,
  );
  const submitted = events.find((e) => e['type'] === 'WorkSubmitted');
  const attempts = attemptsOf(events);
  const conclusion = events.find((e) => CONCLUSIONS.has(String(e['type']))) ?? null;
  const metered = attempts.length === 0 ? null : !attempts.some((a) => a.hold_id?.startsWith('unmetered:'));
  // A refusal records no attempt, but its admission has a receipt: ask for one ordinal past the last attempt.
  const refusedOrdinal = conclusion?.['code'] === 'admission_denied' ? attempts.length : undefined;
  const receipts = await receiptsOf(http, workId, attempts.length + (refusedOrdinal === undefined ? 0 : 1), metered);
  const withReceipts = attempts.map((a) => ({
    ...a,
    admission: receipts.byOrdinal.get(a.ordinal)?.admission ?? null,
    settlement_receipt: receipts.byOrdinal.get(a.ordinal)?.settlement ?? null,
  }));
  const refused = refusedOrdinal === undefined ? undefined : receipts.byOrdinal.get(refusedOrdinal)?.admission;
  const cost = withReceipts.reduce((n, a) => n + BigInt(a.cost_units ?? a.hold_cost_units ?? '0'), 0n);
  const price = events.find((e) => e['type'] === 'AttemptStarted')?.['price'] as Json | undefined;
  return {
    work_id: workId,
    status: String(status['status']),
    session_id: str(status['session_id']),
    purpose: str(submitted?.['purpose']),
    metered,
    error: str(status['error']),
    timeline: events,
    attempts: refused ? [...withReceipts, refusedAttempt(refusedOrdinal!, refused)] : withReceipts,
    conclusion,
    cost_units: cost.toString(),
    currency: str(price?.['currency']),
    receipts_note: receipts.note,
  };
}

/** One row per started attempt, filled in from its settlement and its hold's settlement. */
function attemptsOf(events: readonly Json[]): AttemptAudit[] {
  const attempts = new Map<number, AttemptAudit>();
  const patch = (ordinal: number, fields: Partial<AttemptAudit>) => {
    const current = attempts.get(ordinal);
    if (current) attempts.set(ordinal, { ...current, ...fields });
  };
  for (const e of events) {
    const ordinal = num(e['ordinal']);
    if (ordinal === null) continue;
    if (e['type'] === 'AttemptStarted')
      attempts.set(ordinal, {
        ...emptyAttempt(ordinal),
        reason: str(e['reason']),
        provider: str(e['provider']),
        model: str(e['model']),
        hold_id: str(e['hold_id']),
        hold_cost_units: str(e['hold_cost_units']),
        started_at: str(e['at']),
      });
    else if (e['type'] === 'AttemptSettled' || e['type'] === 'AttemptSettledUnknown') patch(ordinal, settledFields(e));
    else if (e['type'] === 'HoldSettled')
      patch(ordinal, {
        hold_outcome: str(e['outcome']),
        // A hold kept whole (failed after dispatch) costs its worst case: absent is unknown, never zero.
        cost_units: str(e['cost_units']) ?? (e['outcome'] === 'not_dispatched' ? '0' : null),
      });
  }
  return [...attempts.values()].sort((a, b) => a.ordinal - b.ordinal);
}

/** What an attempt's settlement fills in; one settled unknown has no domain, settlement or usage of its own. */
function settledFields(e: Json): Partial<AttemptAudit> {
  const when = { settled_at: str(e['at']), latency_ms: num(e['latency_ms']), error: str(e['error']) };
  if (e['type'] === 'AttemptSettledUnknown') return { ...when, domain: 'unknown', settlement: 'unknown' };
  const usage = (e['usage'] ?? {}) as Json;
  return {
    ...when,
    domain: str(e['domain']),
    settlement: str(e['settlement']),
    input_tokens: num(usage['input_tokens']),
    output_tokens: num(usage['output_tokens']),
  };
}

function emptyAttempt(ordinal: number): AttemptAudit {
  return {
    ordinal,
    reason: null,
    provider: null,
    model: null,
    hold_id: null,
    hold_cost_units: null,
    started_at: null,
    settled_at: null,
    domain: null,
    settlement: null,
    latency_ms: null,
    input_tokens: null,
    output_tokens: null,
    error: null,
    hold_outcome: null,
    cost_units: null,
    admission: null,
    settlement_receipt: null,
  };
}

function refusedAttempt(ordinal: number, admission: ReceiptSummary): AttemptAudit {
  return { ...emptyAttempt(ordinal), reason: 'refused', cost_units: '0', admission };
}

interface AttemptReceipts {
  readonly byOrdinal: Map<number, { admission?: ReceiptSummary; settlement?: ReceiptSummary }>;
  readonly note: string | null;
}

async function receiptsOf(
  http: TallyHttp,
  workId: string,
  ordinals: number,
  metered: boolean | null,
): Promise<AttemptReceipts> {
  const byOrdinal: AttemptReceipts['byOrdinal'] = new Map();
  if (metered === false) return { byOrdinal, note: 'the unit ran unmetered: the budget authority holds no receipts' };
  try {
    for (let ordinal = 0; ordinal < ordinals; ordinal++) {
      const request = encodeURIComponent(`${workId}:attempt:${ordinal}`);
      const { receipts } = await http.get<{ receipts: Json[] }>('authority', `/v1/receipts?request_id=${request}`);
      const entry: { admission?: ReceiptSummary; settlement?: ReceiptSummary } = {};
      for (const r of receipts) {
        if (r['kind'] === 'admission') entry.admission = summaryOf(r);
        else if (r['kind'] === 'settlement') entry.settlement = summaryOf(r);
      }
      byOrdinal.set(ordinal, entry);
    }
    return { byOrdinal, note: null };
  } catch (error) {
    if (error instanceof CliError && error.exitCode !== ExitCode.usage)
      return { byOrdinal, note: `the authority's receipts could not be read: ${error.message}` };
    throw error;
  }
}

export function summaryOf(r: Json): ReceiptSummary {
  return {
    id: String(r['id']),
    kind: String(r['kind']),
    verdict: String(r['verdict']),
    reason: str(r['reason']),
    settlement: str(r['settlement']),
    issued_at: String(r['issued_at']),
    chain_index: num(r['chain_index']),
  };
}
