// GET /v1/receipts/{id} (the signed receipt, from the projection) and GET /v1/keys.
import { Controller, Get, Inject, Param, Query, Res } from '@nestjs/common';
import { IsString, Length } from 'class-validator';
import { rootOfReceiptId } from '@tally/budget-application';
import { BudgetQueries } from '@tally/budget-projections';
import { AUTHORITY_PORT, type AuthorityPort } from '../authority.port.js';
import { Freshness } from './freshness.js';
import { notFound, staleHeader, type HeaderSink } from './http-support.js';

export class ReceiptsQueryDto {
  @IsString() @Length(1, 256) request_id!: string;
}

@Controller('v1')
export class ReceiptsController {
  constructor(
    @Inject(AUTHORITY_PORT) private readonly authority: AuthorityPort,
    @Inject(BudgetQueries) private readonly queries: BudgetQueries,
    @Inject(Freshness) private readonly freshness: Freshness,
  ) {}

  /** Additive: every receipt of one request, oldest first (B17: one per decision, on every path). */
  @Get('receipts')
  async receiptsOfRequest(@Query() query: ReceiptsQueryDto) {
    const receipts = await this.queries.receiptsOfRequest(query.request_id);
    return { receipts: receipts.map((r) => ({ ...r.body, signature: r.signature, key_id: r.key_id })) };
  }

  @Get('receipts/:id')
  async receipt(@Param('id') id: string, @Res({ passthrough: true }) res: HeaderSink) {
    const root = rootOfReceiptId(id);
    if (root !== undefined) staleHeader(res, await this.freshness.awaitTree(root));
    const receipt = await this.queries.receipt(id);
    if (!receipt) throw notFound('receipt', id);
    return { ...receipt.body, signature: receipt.signature, key_id: receipt.key_id };
  }

  @Get('keys')
  keys() {
    return { keys: this.authority.keys() };
  }
}
