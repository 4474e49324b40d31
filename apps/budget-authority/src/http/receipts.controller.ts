// GET /v1/receipts/{id} (the signed receipt, from the projection) and the receipts of one request.
import { Controller, Get, Inject, Param, Query, Res } from '@nestjs/common';
import { IsString, Length } from 'class-validator';
import { rootOfReceiptId } from '@tally/budget-application';
import { BudgetQueries, type ReceiptView } from '@tally/budget-projections';
import { Access, Caller, type Principal } from '@tally/platform-auth';
import { Freshness } from './freshness.js';
import { notFound, staleHeader, type HeaderSink } from './http-support.js';

export class ReceiptsQueryDto {
  @IsString() @Length(1, 256) request_id!: string;
}

/** A capability token reads the receipts of its own capability only. */
function visibleTo(caller: Principal, receipt: ReceiptView): boolean {
  return caller.kind !== 'capability' || receipt.body['capability_id'] === caller.capability_id;
}

@Controller('v1')
export class ReceiptsController {
  constructor(
    @Inject(BudgetQueries) private readonly queries: BudgetQueries,
    @Inject(Freshness) private readonly freshness: Freshness,
  ) {}

  /** Additive: every receipt of one request, oldest first (B17: one per decision, on every path). */
  @Get('receipts')
  @Access('reader', 'capability')
  async receiptsOfRequest(@Query() query: ReceiptsQueryDto, @Caller() caller: Principal) {
    const receipts = (await this.queries.receiptsOfRequest(query.request_id)).filter((r) => visibleTo(caller, r));
    return { receipts: receipts.map((r) => ({ ...r.body, signature: r.signature, key_id: r.key_id })) };
  }

  @Get('receipts/:id')
  @Access('reader', 'capability')
  async receipt(@Param('id') id: string, @Res({ passthrough: true }) res: HeaderSink, @Caller() caller: Principal) {
    const root = rootOfReceiptId(id);
    if (root !== undefined) staleHeader(res, await this.freshness.awaitTree(root));
    const receipt = await this.queries.receipt(id);
    if (!receipt || !visibleTo(caller, receipt)) throw notFound('receipt', id);
    return { ...receipt.body, signature: receipt.signature, key_id: receipt.key_id };
  }
}
