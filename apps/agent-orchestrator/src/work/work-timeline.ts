// A work unit's events as an auditor reads them (GET /v1/work/{id}/events, `tally audit
// work`): each event in commit order with its time and what it decided, from the ledger
// itself rather than the projection. The conversation stays out: messages, replies and call
// options are summarized by their size, so the timeline shows what happened and what it
// cost, never what was said.
import type { WorkEvent } from '@tally/orchestrator-domain';
import type { WorkScope } from '@tally/orchestrator-projections';
import type { OrchestratorRuntime } from '../orchestrator.runtime.js';

export interface TimelineEvent {
  readonly type: WorkEvent['type'];
  readonly at: string;
  readonly [field: string]: unknown;
}

/** Fields that carry conversation content: replaced by their length. */
const CONTENT_FIELDS = new Set(['messages', 'options', 'output', 'output_parts', 'partial_output']);

export function timelineEventOf(event: WorkEvent): TimelineEvent {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(event)) {
    if (key === 'work_id') continue;
    if (!CONTENT_FIELDS.has(key)) out[key] = value;
    else if (typeof value === 'string') out[`${key}_chars`] = value.length;
    else if (Array.isArray(value)) out[`${key}_count`] = value.length;
    else if (value !== undefined) out[`${key}_present`] = true;
  }
  return out as TimelineEvent;
}

export class WorkTimeline {
  constructor(private readonly rt: OrchestratorRuntime) {}

  /** The unit's events, or undefined when the caller may not see it (or it does not exist). */
  async events(workId: string, scope: WorkScope): Promise<{ work_id: string; events: TimelineEvent[] } | undefined> {
    if (!(await this.rt.reads.unit(workId, scope))) return undefined;
    const view = await this.rt.repository.load(workId);
    return { work_id: workId, events: view.events.map(timelineEventOf) };
  }
}
