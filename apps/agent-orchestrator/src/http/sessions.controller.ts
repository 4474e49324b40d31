// Session reads (http-api.md): the messages a model is shown, and the full log, scoped to
// the caller in the query: a tenant's operators, or the token the units were submitted with.
import { Controller, Get, Inject, Param } from '@nestjs/common';
import type { ProjectedEntry, ProjectedMessage, ProjectionWarning } from '@tally/orchestrator-projections';
import { Access, Caller, type Principal } from '@tally/platform-auth';
import { WorkReads } from '../work/work-reads.js';
import { notFound } from './rejections.js';
import { workScopeOf } from './work-scope.js';

@Controller('v1/sessions')
export class SessionsController {
  constructor(@Inject(WorkReads) private readonly reads: WorkReads) {}

  @Get(':id/messages')
  @Access('reader', 'capability')
  async messages(@Param('id') id: string, @Caller() caller: Principal): Promise<{ messages: ProjectedMessage[] }> {
    const messages = await this.reads.sessionMessages(id, workScopeOf(caller));
    if (!messages) throw notFound('session', id);
    return { messages };
  }

  /** `warnings` lists events the projection could not apply; it is empty in a healthy ledger (O4). */
  @Get(':id/log')
  @Access('reader', 'capability')
  async log(
    @Param('id') id: string,
    @Caller() caller: Principal,
  ): Promise<{ entries: ProjectedEntry[]; warnings: ProjectionWarning[] }> {
    const log = await this.reads.sessionLog(id, workScopeOf(caller));
    if (!log) throw notFound('session', id);
    return log;
  }
}
