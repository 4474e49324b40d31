// Reads across capabilities for the web console (issue 12): the capability tree, the holds
// open now, ambiguities waiting for the reconciler, and spend summed per time bucket. Each
// read is bounded, and each is restricted in the query to what the caller may see.
import { In, IsNull, MoreThan, MoreThanOrEqual, type DataSource, type FindOptionsWhere } from 'typeorm';
import { AmbiguityRow, CapabilityRow, HoldRow, MutationRow, UsageRow } from './entities.js';

/** Holds that still hold exposure: not yet settled, released, reversed or cancelled. */
export const OPEN_HOLD_STATUSES: readonly string[] = ['authorized', 'captured', 'admitted'];

/** Most mutation rows one spend series sums; a longer window is cut at the newest rows and says so. */
export const SPEND_ROWS_MAX = 100_000;

/** `capabilityId` set: only that capability's rows; `visible` false: nothing at all. */
export interface OverviewScope {
  readonly capabilityId?: string;
  readonly visible: boolean;
}

export interface SpendBucket {
  readonly start_ms: number;
  readonly currency: string;
  readonly realized_units: bigint;
  readonly entries: number;
}

export interface SpendSeries {
  readonly buckets: SpendBucket[];
  /** True when the window held more than SPEND_ROWS_MAX mutations: the oldest were left out. */
  readonly truncated: boolean;
}

export class OverviewQueries {
  constructor(private readonly dataSource: DataSource) {}

  /** Capabilities in issue order after `afterSequence`, at most `limit`. */
  async capabilities(scope: OverviewScope, afterSequence: number, limit: number): Promise<CapabilityRow[]> {
    if (!scope.visible) return [];
    const where: FindOptionsWhere<CapabilityRow> = { issuedSequence: MoreThan(afterSequence) };
    if (scope.capabilityId !== undefined) where.capabilityId = scope.capabilityId;
    return this.dataSource.manager.find(CapabilityRow, { where, order: { issuedSequence: 'ASC' }, take: limit });
  }

  async usageOf(capabilityIds: readonly string[]): Promise<UsageRow[]> {
    if (capabilityIds.length === 0) return [];
    return this.dataSource.manager.find(UsageRow, {
      where: { capabilityId: In([...capabilityIds]) },
      order: { capabilityId: 'ASC', grantIndex: 'ASC' },
    });
  }

  /** Open holds, the ones that expire first first. */
  async openHolds(scope: OverviewScope, limit: number): Promise<HoldRow[]> {
    if (!scope.visible) return [];
    const where: FindOptionsWhere<HoldRow> = { status: In([...OPEN_HOLD_STATUSES]) };
    if (scope.capabilityId !== undefined) where.capabilityId = scope.capabilityId;
    return this.dataSource.manager.find(HoldRow, { where, order: { expiresAtMs: 'ASC' }, take: limit });
  }

  /** Ambiguities, oldest first; `open` keeps only those the reconciler has not resolved yet. */
  async ambiguities(scope: OverviewScope, open: boolean, limit: number): Promise<AmbiguityRow[]> {
    if (!scope.visible) return [];
    const where: FindOptionsWhere<AmbiguityRow> = open ? { resolvedSequence: IsNull() } : {};
    if (scope.capabilityId !== undefined) where.capabilityId = scope.capabilityId;
    return this.dataSource.manager.find(AmbiguityRow, { where, order: { recordedSequence: 'ASC' }, take: limit });
  }

  /**
   * Realized cost per bucket of `bucketMs` since `sinceMs`, per currency. Currency lives on
   * the usage row of the mutation's grant; a grant without one is counted under ''.
   */
  async spend(scope: OverviewScope, sinceMs: number, bucketMs: number): Promise<SpendSeries> {
    if (!scope.visible) return { buckets: [], truncated: false };
    const where: FindOptionsWhere<MutationRow> = { occurredAtMs: MoreThanOrEqual(sinceMs) };
    if (scope.capabilityId !== undefined) where.capabilityId = scope.capabilityId;
    const rows = await this.dataSource.manager.find(MutationRow, {
      where,
      order: { occurredAtMs: 'DESC' },
      take: SPEND_ROWS_MAX + 1,
      select: { capabilityId: true, grantIndex: true, occurredAtMs: true, realizedDeltaUnits: true },
    });
    const truncated = rows.length > SPEND_ROWS_MAX;
    const counted = rows.slice(0, SPEND_ROWS_MAX).filter((r) => r.realizedDeltaUnits !== 0n);
    const currencies = await this.currencies([...new Set(counted.map((r) => r.capabilityId))]);
    const sums = new Map<string, { start_ms: number; currency: string; realized_units: bigint; entries: number }>();
    for (const row of counted) {
      const start = Math.floor(row.occurredAtMs / bucketMs) * bucketMs;
      const currency = currencies.get(`${row.capabilityId}#${row.grantIndex}`) ?? '';
      const key = `${start}|${currency}`;
      const sum = sums.get(key) ?? { start_ms: start, currency, realized_units: 0n, entries: 0 };
      sum.realized_units += row.realizedDeltaUnits;
      sum.entries += 1;
      sums.set(key, sum);
    }
    const buckets = [...sums.values()].sort((a, b) => a.start_ms - b.start_ms || a.currency.localeCompare(b.currency));
    return { buckets, truncated };
  }

  private async currencies(capabilityIds: string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    // Bounded batches keep the IN list within every database's parameter limit.
    for (let i = 0; i < capabilityIds.length; i += 500) {
      for (const row of await this.usageOf(capabilityIds.slice(i, i + 500)))
        if (row.currency !== null) out.set(`${row.capabilityId}#${row.grantIndex}`, row.currency);
    }
    return out;
  }
}
