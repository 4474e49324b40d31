// Session reads (http-api.md): the messages a model is shown, and the full log.
import { Controller, Get, Inject, Param } from '@nestjs/common';
import type { ProjectedEntry, ProjectedMessage, ProjectionWarning } from '@tally/orchestrator-projections';
import { WorkReads } from '../work/work-reads.js';
import { notFound } from './rejections.js';

@Controller('v1/sessions')
export class SessionsController {
  constructor(@Inject(WorkReads) private readonly reads: WorkReads) {}

  @Get(':id/messages')
  async messages(@Param('id') id: string): Promise<{ messages: ProjectedMessage[] }> {
    const messages = await this.reads.sessionMessages(id);
    if (!messages) throw notFound('session', id);
    return { messages };
  }

  /** `warnings` lists events the projection could not apply; it is empty in a healthy ledger (O4). */
  @Get(':id/log')
  async log(@Param('id') id: string): Promise<{ entries: ProjectedEntry[]; warnings: ProjectionWarning[] }> {
    const log = await this.reads.sessionLog(id);
    if (!log) throw notFound('session', id);
    return log;
  }
}
