// Signed receipts page by page in commit order (oldest first), for exports: the order of
// every receipt chain (ADR 0030). The cursor is the last receipt's place in the stream,
// `<commit_index>.<commit_position>`, so a page never repeats or skips a receipt while the
// authority keeps writing. Scope is part of the query, never a filter afterwards.
import type { DataSource } from 'typeorm';
import { scopeQuery, type BudgetScope } from './budget-queries.js';
import { ReceiptRow } from './entities.js';

export interface ReceiptPageFilter {
  /** Only this capability's receipts. */
  readonly capabilityId?: string;
  /** Only receipts recorded at or after this time. */
  readonly sinceMs?: number;
  /** Only receipts after this cursor (from an earlier page). */
  readonly after?: ReceiptCursor;
  readonly limit: number;
  /** The caller's scope, as conditions of the query (EVERY_TENANT for an admin). */
  readonly scope: BudgetScope;
  /** Also count every receipt the filter matches, cursor aside (for a progress bar). */
  readonly count?: boolean;
}

export interface ReceiptCursor {
  readonly commitIndex: number;
  readonly commitPosition: number;
}

export interface ReceiptPage {
  readonly rows: readonly ReceiptRow[];
  /** The cursor of the next page; undefined when this is the last one. */
  readonly next: ReceiptCursor | undefined;
  readonly total: number | undefined;
}

export const formatReceiptCursor = (c: ReceiptCursor): string => `${c.commitIndex}.${c.commitPosition}`;

export function parseReceiptCursor(text: string): ReceiptCursor | undefined {
  const match = /^(\d{1,15})\.(\d{1,6})$/.exec(text);
  return match ? { commitIndex: Number(match[1]), commitPosition: Number(match[2]) } : undefined;
}

export async function receiptPage(dataSource: DataSource, filter: ReceiptPageFilter): Promise<ReceiptPage> {
  const query = () => {
    const q = scopeQuery(dataSource.manager.createQueryBuilder(ReceiptRow, 'r'), 'r', filter.scope);
    if (filter.capabilityId !== undefined)
      q.andWhere('r.capabilityId = :capability', { capability: filter.capabilityId });
    if (filter.sinceMs !== undefined) q.andWhere('r.recordedAtMs >= :since', { since: filter.sinceMs });
    return q;
  };
  const page = query();
  if (filter.after)
    page.andWhere('(r.commitIndex > :ci OR (r.commitIndex = :ci AND r.commitPosition > :cp))', {
      ci: filter.after.commitIndex,
      cp: filter.after.commitPosition,
    });
  const rows = await page
    .orderBy('r.commitIndex', 'ASC')
    .addOrderBy('r.commitPosition', 'ASC')
    .limit(filter.limit + 1)
    .getMany();
  const more = rows.length > filter.limit;
  const kept = more ? rows.slice(0, filter.limit) : rows;
  const last = kept.at(-1);
  return {
    rows: kept,
    next: more && last ? { commitIndex: last.commitIndex, commitPosition: last.commitPosition } : undefined,
    total: filter.count ? await query().getCount() : undefined,
  };
}
