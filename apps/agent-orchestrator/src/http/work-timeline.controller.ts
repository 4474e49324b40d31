// GET /v1/work/{id}/events (additive): the unit's timeline for audits, scoped like its status.
import { Controller, Get, Inject, Param } from '@nestjs/common';
import { Access, Caller, type Principal } from '@tally/platform-auth';
import { WorkTimeline } from '../work/work-timeline.js';
import { notFound } from './rejections.js';
import { workScopeOf } from './work-scope.js';

const WORK_ID = /^[A-Za-z0-9_-]{1,64}$/;

@Controller('v1/work')
export class WorkTimelineController {
  constructor(@Inject(WorkTimeline) private readonly timeline: WorkTimeline) {}

  @Get(':id/events')
  @Access('reader', 'capability')
  async events(@Param('id') id: string, @Caller() caller: Principal) {
    const found = WORK_ID.test(id) ? await this.timeline.events(id, workScopeOf(caller)) : undefined;
    if (!found) throw notFound('work', id);
    return found;
  }
}
