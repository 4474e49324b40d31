// The authority's operator metrics: admissions by verdict and reason with Admit latency,
// settlements, expired holds and the reconciler's resolutions, counted where the
// BudgetAuthority answers (so HTTP and NATS callers count alike); and, read from the
// budget projection at scrape time, holds open, exposure, committed cost and overruns by
// currency, and ambiguities open with the age of the oldest. Labels are closed sets (verdicts,
// rejection codes, outcome kinds, currencies), never ids.
import type { JetStreamManager } from '@nats-io/jetstream';
import {
  BudgetAuthority,
  Reasons,
  type AdmitCommand,
  type AdmitDecision,
  type BudgetAuthorityLimits,
  type BudgetAuthorityPorts,
  type SettleCommand,
  type SettleResult,
} from '@tally/budget-application';
import { BUDGET_TABLES } from '@tally/budget-projections';
import { labelValue, sharedRead, webhookMetrics } from '@tally/platform-app';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DataSource } from 'typeorm';

/** Hold statuses that still hold budget: neither settled nor undone. */
export const OPEN_HOLD_STATUSES = ['authorized', 'captured', 'admitted'] as const;
/** Admit is a ledger append: milliseconds in the common case, seconds when the stream is slow. */
const ADMIT_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export interface AuthorityCounters {
  readonly admissions: Counter<'verdict' | 'reason'>;
  readonly admitSeconds: Histogram<'verdict'>;
  readonly settlements: Counter<'outcome' | 'verdict'>;
  readonly expiredHolds: Counter;
  readonly realizedUnsettled: Counter;
  readonly resolutions: Counter<'resolution'>;
}

export function authorityCounters(registry: Registry): AuthorityCounters {
  const registers = [registry];
  return {
    admissions: new Counter({
      name: 'tally_admissions_total',
      help: 'Admit answers, by verdict (allow, deny, error) and reason (a rejection code; none for an allow)',
      labelNames: ['verdict', 'reason'],
      registers,
    }),
    admitSeconds: new Histogram({
      name: 'tally_admit_duration_seconds',
      help: 'Time to answer an Admit, from the command reaching the authority to its receipt',
      labelNames: ['verdict'],
      buckets: ADMIT_BUCKETS,
      registers,
    }),
    settlements: new Counter({
      name: 'tally_settlements_total',
      help: 'Settle answers, by the outcome kind the caller reported and the verdict',
      labelNames: ['outcome', 'verdict'],
      registers,
    }),
    expiredHolds: new Counter({
      name: 'tally_holds_expired_total',
      help: 'Uncaptured holds this replica reversed because their TTL passed (B20)',
      registers,
    }),
    realizedUnsettled: new Counter({
      name: 'tally_holds_realized_unsettled_total',
      help: 'Admitted holds this replica realized in full because no settlement came within their TTL and the grace (ADR 0047)',
      registers,
    }),
    resolutions: new Counter({
      name: 'tally_reconciler_resolutions_total',
      help: 'Ambiguities the reconciler resolved on this replica, by resolution (B21)',
      labelNames: ['resolution'],
      registers,
    }),
  };
}

/**
 * A deny reason as a rejection code. The receipt keeps the domain's sentence, which may
 * name an id or an amount ("no grant covers srv/tool"), so the label is read from the
 * sentence's fixed part; the authority's own reasons are fixed sentences and become their
 * name. A sentence nobody listed here is counted as `other`, never as itself.
 */
const REASON_PATTERNS: readonly (readonly [RegExp, string])[] = [
  [/^no grant covers /, 'no_matching_grant'],
  [/^capability \S+ is unknown$/, 'capability_unknown'],
  [/^capability revoked$/, 'capability_revoked'],
  [/^capability expired$/, 'capability_expired'],
  [/^capability subject mismatch$/, 'subject_mismatch'],
  [/max_cost_per_invocation/, 'requested_cost_exceeds_max_per_invocation'],
  [/^(a requested cost is required|requested cost must not be negative)/, 'cost_required'],
  [/^max invocations reached$/, 'max_invocations_reached'],
  [/^budget exhausted$/, 'total_cost_limit_reached'],
  [/^budget overrun: /, 'budget_overrun'],
  [/^delegated budget exhausted$/, 'capability_budget_exhausted'],
  [/^a single hold on this grant may expose/, 'hold_cap_exceeded'],
  [/requested_tokens is required$/, 'tokens_required'],
  [/^requested_tokens \d+ exceed tokens_per_minute/, 'requested_tokens_exceed_rate_limit'],
  [/^request id was already used$/, 'request_replayed'],
  [/invocation was already dispatched$/, 'already_dispatched'],
  [/^execution nonce preflight was already performed/, 'preflight_replayed'],
  [/, past the largest amount, 2\^63-1 minor units$/, 'amount_out_of_range'],
  [new RegExp(`^${Reasons.runtimeDenied}`), 'runtime_denied'],
];
const FIXED_REASONS = new Map<string, string>(
  Object.entries(Reasons).map(([key, sentence]) => [sentence, key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)]),
);

export function admissionReasonCode(reason: string | undefined): string {
  if (reason === undefined || reason === '') return 'unspecified';
  const fixed = FIXED_REASONS.get(reason);
  if (fixed) return fixed;
  return REASON_PATTERNS.find(([pattern]) => pattern.test(reason))?.[1] ?? 'other';
}

/** Why a command failed without an answer, as a label: the error's class name when it names the failure. */
function failureReason(error: unknown): string {
  const name = error instanceof Error ? error.constructor.name : '';
  return name === 'StreamFull' ? 'stream_full' : name === 'QueueFull' ? 'queue_full' : 'unavailable';
}

/** The BudgetAuthority with its answers counted and timed; otherwise exactly the same object. */
export class MeteredBudgetAuthority extends BudgetAuthority {
  constructor(
    ports: BudgetAuthorityPorts,
    limits: BudgetAuthorityLimits,
    private readonly counters: AuthorityCounters,
  ) {
    super(ports, limits);
  }

  override async admit(command: AdmitCommand): Promise<AdmitDecision> {
    const stop = this.counters.admitSeconds.startTimer();
    try {
      const decision = await super.admit(command);
      stop({ verdict: decision.verdict });
      const reason = decision.verdict === 'allow' ? 'none' : admissionReasonCode(decision.reason);
      this.counters.admissions.inc({ verdict: decision.verdict, reason });
      return decision;
    } catch (error) {
      stop({ verdict: 'error' });
      this.counters.admissions.inc({ verdict: 'error', reason: failureReason(error) });
      throw error;
    }
  }

  override async settle(command: SettleCommand): Promise<SettleResult> {
    const outcome = labelValue(command.outcome?.kind, 'unspecified');
    try {
      const result = await super.settle(command);
      this.counters.settlements.inc({ outcome, verdict: result.receipt.verdict });
      return result;
    } catch (error) {
      this.counters.settlements.inc({ outcome, verdict: 'error' });
      throw error;
    }
  }

  override async expireHolds(rootIds?: readonly string[]) {
    const expired = await super.expireHolds(rootIds);
    const count = expired.reduce((n, e) => n + e.expired_hold_ids.length, 0);
    if (count > 0) this.counters.expiredHolds.inc(count);
    return expired;
  }

  override async realizeUnsettled(rootIds?: readonly string[]) {
    const realized = await super.realizeUnsettled(rootIds);
    const count = realized.reduce((n, r) => n + r.realized_hold_ids.length, 0);
    if (count > 0) this.counters.realizedUnsettled.inc(count);
    return realized;
  }

  override async reconcile(rootId: string) {
    const resolutions = await super.reconcile(rootId);
    for (const r of resolutions)
      if (r.resolution !== undefined) this.counters.resolutions.inc({ resolution: labelValue(r.resolution) });
    return resolutions;
  }
}

interface CurrencyFigures {
  currency: string;
  holds: number;
  exposure: number;
  committed: number;
  overrun: number;
}

interface LedgerFigures {
  readonly byCurrency: CurrencyFigures[];
  readonly ambiguitiesOpen: number;
  readonly settlementsMissing: number;
  readonly holdsOverdue: number;
  readonly oldestAmbiguitySequence: number | null;
}

/** Sums over root capabilities only: a delegated grant's spend is already counted in its ancestors' figures. */
async function readLedgerFigures(dataSource: DataSource): Promise<LedgerFigures> {
  const t = BUDGET_TABLES;
  const statuses = OPEN_HOLD_STATUSES.map((s) => `'${s}'`).join(', ');
  // Each row is an amount (at most 2^63-1, ADR 0044) but a sum over trees is not: summed as doubles, a gauge's own
  // type, SQLite's SUM cannot overflow into an error that would fail the scrape.
  const money = await dataSource.query(
    `SELECT u.currency AS currency, SUM(CAST(u.exposed_cost_units AS DOUBLE PRECISION)) AS exposure,
            SUM(CAST(u.committed_cost_units AS DOUBLE PRECISION)) AS committed,
            SUM(CAST(u.overrun_cost_units AS DOUBLE PRECISION)) AS overrun
       FROM ${t.usage} u JOIN ${t.capabilities} c ON c.capability_id = u.capability_id
      WHERE c.parent_id IS NULL GROUP BY u.currency`,
  );
  const holds = await dataSource.query(
    `SELECT u.currency AS currency, COUNT(*) AS holds
       FROM ${t.holds} h JOIN ${t.usage} u ON u.capability_id = h.capability_id AND u.grant_index = h.grant_index
      WHERE h.status IN (${statuses}) GROUP BY u.currency`,
  );
  // A missing settlement waits for the orchestrator, not the reconciler (ADR 0047): counted apart, never aged here.
  const ambiguities = await dataSource.query(
    `SELECT COUNT(*) AS open,
            MIN(CASE WHEN kind <> 'settlement_missing' THEN recorded_sequence END) AS oldest,
            SUM(CASE WHEN kind = 'settlement_missing' THEN 1 ELSE 0 END) AS missing
       FROM ${t.ambiguities} WHERE resolution IS NULL`,
  );
  // Captured past their TTL: expiry never releases these (B20), only a settlement does.
  const overdue = await dataSource.query(
    `SELECT COUNT(*) AS overdue FROM ${t.holds} WHERE status IN ('captured', 'admitted') AND expires_at_ms <= ${Date.now()}`,
  );
  const byCurrency = new Map<string, CurrencyFigures>();
  const entry = (currency: unknown) => {
    const key = labelValue(typeof currency === 'string' ? currency : null, 'none');
    let e = byCurrency.get(key);
    if (!e) byCurrency.set(key, (e = { currency: key, holds: 0, exposure: 0, committed: 0, overrun: 0 }));
    return e;
  };
  for (const row of money as Record<string, unknown>[]) {
    const e = entry(row['currency']);
    e.exposure += Number(row['exposure'] ?? 0);
    e.committed += Number(row['committed'] ?? 0);
    e.overrun += Number(row['overrun'] ?? 0);
  }
  for (const row of holds as Record<string, unknown>[]) entry(row['currency']).holds += Number(row['holds'] ?? 0);
  const a = (ambiguities as Record<string, unknown>[])[0] ?? {};
  return {
    byCurrency: [...byCurrency.values()],
    ambiguitiesOpen: Number(a['open'] ?? 0),
    settlementsMissing: Number(a['missing'] ?? 0),
    holdsOverdue: Number((overdue as Record<string, unknown>[])[0]?.['overdue'] ?? 0),
    oldestAmbiguitySequence: a['oldest'] === null || a['oldest'] === undefined ? null : Number(a['oldest']),
  };
}

/**
 * The ledger's standing figures from the projection, read once per scrape. The oldest open
 * ambiguity's age comes from the time the stream stored its recording event, so it is
 * right on every replica and across restarts.
 */
export function registerLedgerGauges(
  registry: Registry,
  dataSource: DataSource,
  jsm: JetStreamManager,
  budgetStream: string,
): void {
  const read = sharedRead(async () => {
    const figures = await readLedgerFigures(dataSource);
    let oldestAgeSeconds = 0;
    if (figures.oldestAmbiguitySequence !== null) {
      const msg = await jsm.streams.getMessage(budgetStream, { seq: figures.oldestAmbiguitySequence });
      if (msg) oldestAgeSeconds = Math.max(0, (Date.now() - msg.time.getTime()) / 1000);
    }
    return { ...figures, oldestAgeSeconds };
  });
  const perCurrency = (name: string, help: string, value: (e: LedgerFigures['byCurrency'][number]) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['currency'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const e of (await read())?.byCurrency ?? []) this.set({ currency: e.currency }, value(e));
      },
    });
  perCurrency('tally_holds_open', 'Holds that still hold budget (authorized, captured or admitted)', (e) => e.holds);
  perCurrency(
    'tally_exposure_units',
    'Exposed cost over root capabilities (worst cases of open holds and of holds kept whole after a failed dispatch), in minor units',
    (e) => e.exposure,
  );
  perCurrency(
    'tally_committed_cost_units',
    'Committed cost (exposed plus realized) over root capabilities, in minor units',
    (e) => e.committed,
  );
  // A counter read from the ledger, not counted per answer: every replica reports the same
  // exact total (a re-sent settlement is not counted twice), and it only grows.
  new Counter({
    name: 'tally_budget_overrun_units_total',
    help: 'Charges providers billed beyond their holds, booked as spend over root capabilities (ADR 0043), in minor units',
    labelNames: ['currency'],
    registers: [registry],
    async collect() {
      const figures = await read();
      if (!figures) return;
      this.reset();
      for (const e of figures.byCurrency) this.inc({ currency: e.currency }, e.overrun);
    },
  });
  new Gauge({
    name: 'tally_ambiguities_open',
    help: 'Recorded ambiguities not resolved yet (settlement_missing ones included: tally_settlements_missing counts those)',
    registers: [registry],
    async collect() {
      const figures = await read();
      if (figures) this.set(figures.ambiguitiesOpen);
    },
  });
  new Gauge({
    name: 'tally_settlements_missing',
    help: 'Admitted holds realized in full because their settlement never came, not yet corrected by a late one (ADR 0047)',
    registers: [registry],
    async collect() {
      const figures = await read();
      if (figures) this.set(figures.settlementsMissing);
    },
  });
  new Gauge({
    name: 'tally_holds_settlement_overdue',
    help: 'Captured or admitted holds past their TTL with no settlement: expiry never releases these; an admitted one is realized in full after the grace',
    registers: [registry],
    async collect() {
      const figures = await read();
      if (figures) this.set(figures.holdsOverdue);
    },
  });
  new Gauge({
    name: 'tally_ambiguity_oldest_age_seconds',
    help: 'Age of the oldest unresolved ambiguity the reconciler resolves, settlement_missing aside (0 when none is open)',
    registers: [registry],
    async collect() {
      const figures = await read();
      if (figures) this.set(figures.oldestAgeSeconds);
    },
  });
  // Defined here so the series exist before webhooks are sent (the sender takes them from this registry).
  webhookMetrics(registry);
}
