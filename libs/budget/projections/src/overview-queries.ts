// Reads across capabilities for the web console (issue 12): the capability tree, the holds
// open now, ambiguities waiting for the reconciler, and spend summed per time bucket. Each
// read is bounded, and each is restricted in the query to what the caller may see.
import { In, type DataSource, type ObjectLiteral } from 'typeorm';
import { scopeQuery, type BudgetScope } from './budget-queries.js';
import { AmbiguityRow, CapabilityRow, HoldRow, MutationRow, UsageRow } from './entities.js';

/** Holds that still hold exposure: not yet settled, released, reversed or cancelled. */
export const OPEN_HOLD_STATUSES: readonly string[] = ['authorized', 'captured', 'admitted'];

/** Most mutation rows one spend series sums; a longer window is cut at the newest rows and says so. */
export const SPEND_ROWS_MAX = 100_000;

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

  /** Capabilities in issue order after `afterSequence`, at most `limit`; the tenant is the capability's own column. */
  async capabilities(scope: BudgetScope, afterSequence: number, limit: number): Promise<CapabilityRow[]> {
    const q = this.dataSource.manager
      .createQueryBuilder(CapabilityRow, 'c')
      .where('c.issuedSequence > :after', { after: afterSequence });
    if (scope.capabilityId !== undefined) q.andWhere('c.capabilityId = :cap', { cap: scope.capabilityId });
    if (scope.tenantId !== undefined) q.andWhere('c.tenantId = :tenant', { tenant: scope.tenantId });
    return q.orderBy('c.issuedSequence', 'ASC').take(limit).getMany();
  }

  /** Rows of a table with a capability_id column, restricted in the query to the scope. */
  private scoped<T extends ObjectLiteral>(entity: new () => T, alias: string, scope: BudgetScope) {
    return scopeQuery(this.dataSource.manager.createQueryBuilder(entity, alias), alias, scope);
  }

  async usageOf(capabilityIds: readonly string[]): Promise<UsageRow[]> {
    if (capabilityIds.length === 0) return [];
    return this.dataSource.manager.find(UsageRow, {
      where: { capabilityId: In([...capabilityIds]) },
      order: { capabilityId: 'ASC', grantIndex: 'ASC' },
    });
  }

  /** Open holds, the ones that expire first first. */
  async openHolds(scope: BudgetScope, limit: number): Promise<HoldRow[]> {
    return this.scoped(HoldRow, 'h', scope)
      .andWhere('h.status IN (:...open)', { open: [...OPEN_HOLD_STATUSES] })
      .orderBy('h.expiresAtMs', 'ASC')
      .limit(limit)
      .getMany();
  }

  /** Ambiguities, oldest first; `open` keeps only those the reconciler has not resolved yet. */
  async ambiguities(scope: BudgetScope, open: boolean, limit: number): Promise<AmbiguityRow[]> {
    const q = this.scoped(AmbiguityRow, 'a', scope);
    if (open) q.andWhere('a.resolvedSequence IS NULL');
    return q.orderBy('a.recordedSequence', 'ASC').limit(limit).getMany();
  }

  /**
   * Realized cost per bucket of `bucketMs` since `sinceMs`, per currency. Currency lives on
   * the usage row of the mutation's grant; a grant without one is counted under ''.
   */
  async spend(scope: BudgetScope, sinceMs: number, bucketMs: number): Promise<SpendSeries> {
    const rows = await this.scoped(MutationRow, 'm', scope)
      .andWhere('m.occurredAtMs >= :since', { since: sinceMs })
      .select(['m.eventId', 'm.capabilityId', 'm.grantIndex', 'm.occurredAtMs', 'm.realizedDeltaUnits'])
      .orderBy('m.occurredAtMs', 'DESC')
      .limit(SPEND_ROWS_MAX + 1)
      .getMany();
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
