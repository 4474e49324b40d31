// GET /v1/receipts/{id} (the signed receipt, from the projection), the receipts of one
// request, and every receipt page by page in commit order (exports, ADR 0030). A read that
// would serve a quarantined tree's receipts answers 503 instead (ADR 0045), so an export
// stops rather than silently missing the receipts its projection could not apply.
import { Controller, Get, Inject, Param, Query, Res } from '@nestjs/common';
import { Type } from 'class-transformer';
import { IsInt, IsISO8601, IsOptional, IsString, Length, Matches, Max, Min } from 'class-validator';
import { rootOfCapability, rootOfReceiptId } from '@tally/budget-application';
import {
  BudgetQueries,
  EVERY_TENANT,
  formatReceiptCursor,
  parseReceiptCursor,
  type ReceiptRow,
} from '@tally/budget-projections';
import { Access, Caller, type Principal } from '@tally/platform-auth';
import { budgetScopeOf } from './capability-access.js';
import { Freshness } from './freshness.js';
import { notFound, staleHeader, type HeaderSink } from './http-support.js';

export const RECEIPTS_PAGE_MAX = 1_000;
const RECEIPTS_PAGE_DEFAULT = 100;

export class ReceiptsQueryDto {
  /** The receipts of one request; without it, every receipt in commit order, a page at a time. */
  @IsOptional() @IsString() @Length(1, 256) request_id?: string;
  @IsOptional() @IsString() @Length(1, 128) capability_id?: string;
  /** RFC 3339: only receipts recorded at or after it. */
  @IsOptional() @IsISO8601({ strict: true, strictSeparator: true }) since?: string;
  /** The `next_after` of the previous page. */
  @IsOptional()
  @Matches(/^\d{1,15}\.\d{1,6}$/, { message: 'after must be the next_after of a previous page' })
  after?: string;
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(RECEIPTS_PAGE_MAX) limit?: number;
}

function servedReceipt(row: ReceiptRow): Record<string, unknown> {
  return { ...(JSON.parse(row.body) as Record<string, unknown>), signature: row.signature, key_id: row.keyId };
}

@Controller('v1')
export class ReceiptsController {
  constructor(
    @Inject(BudgetQueries) private readonly queries: BudgetQueries,
    @Inject(Freshness) private readonly freshness: Freshness,
  ) {}

  /**
   * Additive: with `request_id`, every receipt of one request, oldest first (B17: one per
   * decision, on every path). Without it, every receipt the caller may read in commit order
   * (the order of each capability's hash chain), `limit` at a time: pass `next_after` back
   * as `after` until it is null. The first page also has `total`.
   */
  @Get('receipts')
  @Access('reader', 'capability')
  async receipts(@Query() query: ReceiptsQueryDto, @Caller() caller: Principal) {
    if (query.request_id !== undefined) {
      const receipts = await this.queries.receiptsOfRequest(query.request_id, budgetScopeOf(caller));
      this.refuseTreesOf(receipts.map((r) => rootOfReceiptId(String(r.body['receipt_id'] ?? ''))));
      return { receipts: receipts.map((r) => ({ ...r.body, signature: r.signature, key_id: r.key_id })) };
    }
    if (query.capability_id !== undefined)
      await this.freshness.refuseQuarantined(
        rootOfCapability(query.capability_id),
        (await this.queries.capability(query.capability_id, budgetScopeOf(caller))) !== undefined,
        async () => (await this.queries.capability(query.capability_id!, EVERY_TENANT)) !== undefined,
      );
    const after = query.after === undefined ? undefined : parseReceiptCursor(query.after);
    const page = await this.queries.receiptPage({
      ...(query.capability_id === undefined ? {} : { capabilityId: query.capability_id }),
      ...(query.since === undefined ? {} : { sinceMs: Date.parse(query.since) }),
      ...(after === undefined ? {} : { after }),
      limit: query.limit ?? RECEIPTS_PAGE_DEFAULT,
      scope: budgetScopeOf(caller),
      count: after === undefined,
    });
    this.refuseTreesOf(page.rows.map((r) => r.rootId));
    return {
      receipts: page.rows.map(servedReceipt),
      next_after: page.next === undefined ? null : formatReceiptCursor(page.next),
      ...(page.total === undefined ? {} : { total: page.total }),
    };
  }

  @Get('receipts/:id')
  @Access('reader', 'capability')
  async receipt(@Param('id') id: string, @Res({ passthrough: true }) res: HeaderSink, @Caller() caller: Principal) {
    const root = rootOfReceiptId(id);
    if (root !== undefined) staleHeader(res, await this.freshness.awaitTree(root));
    const receipt = await this.queries.receipt(id, budgetScopeOf(caller));
    if (root !== undefined)
      await this.freshness.refuseQuarantined(
        root,
        receipt !== undefined,
        async () => (await this.queries.receipt(id, EVERY_TENANT)) !== undefined,
      );
    if (!receipt) throw notFound('receipt', id);
    return { ...receipt.body, signature: receipt.signature, key_id: receipt.key_id };
  }

  /** A list that holds receipts of a quarantined tree is refused whole: one of its receipts may be missing. */
  private refuseTreesOf(roots: readonly (string | undefined)[]): void {
    if (!this.freshness.anyQuarantined()) return;
    for (const root of new Set(roots)) if (root !== undefined) this.freshness.refuseTree(root);
  }
}
