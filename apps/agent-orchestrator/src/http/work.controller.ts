// The public work API (http-api.md): submit, read status and receipt, abort.
import { Body, Controller, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { SubmitWorkDto } from '@tally/contracts';
import { randomUUID } from 'node:crypto';
import { WorkReads, type WorkStatusBody } from '../work/work-reads.js';
import { WorkSubmission } from '../work/work-submission.js';
import { notFound, problemOf } from './rejections.js';

@Controller('v1/work')
export class WorkController {
  constructor(
    @Inject(WorkSubmission) private readonly submission: WorkSubmission,
    @Inject(WorkReads) private readonly reads: WorkReads,
  ) {}

  @Post()
  @HttpCode(202)
  async submit(@Body() body: SubmitWorkDto): Promise<{ work_id: string; status: 'queued' }> {
    const workId = body.work_id ?? randomUUID();
    const outcome = await this.submission.submit(body, workId);
    if (!outcome.ok) throw problemOf(outcome.rejection, workId);
    return { work_id: outcome.work_id, status: outcome.status };
  }

  @Get(':id')
  async status(@Param('id') id: string): Promise<WorkStatusBody> {
    const status = await this.reads.status(id);
    if (!status) throw notFound('work', id);
    return status;
  }

  @Get(':id/receipt')
  async receipt(@Param('id') id: string): Promise<Record<string, unknown>> {
    const receipt = await this.reads.receipt(id);
    if (!receipt) throw notFound('work', id);
    return receipt;
  }

  @Post(':id/abort')
  @HttpCode(202)
  async abort(@Param('id') id: string): Promise<{ work_id: string; abort: 'requested' }> {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) throw notFound('work', id);
    const outcome = await this.submission.abort(id);
    if (!outcome.ok) throw problemOf(outcome.rejection, id);
    return { work_id: id, abort: 'requested' };
  }
}
