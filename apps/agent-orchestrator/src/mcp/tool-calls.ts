// One governed MCP tool call as a durable work unit (purpose tool_call, entrypoint mcp): the
// route leg is (server, tool), so the admission's server_id is the server's name and its
// tool_name the tool, held at the tool's price; a worker dispatches it and settles it; the
// caller waits on the unit's live subject and answers from the record. A refusal never
// reaches the tool server and comes back as an error result naming the reason.
import { reasonCode } from '@tally/orchestrator-dialects';
import type { WorkUnitState } from '@tally/orchestrator-domain';
import { isTerminal } from '@tally/orchestrator-domain';
import { randomUUID } from 'node:crypto';
import { LiveReply } from '../gateway/live-reply.js';
import type { OrchestratorRuntime } from '../orchestrator.runtime.js';
import type { WorkSubmission } from '../work/work-submission.js';
import type { ToolServers } from './tool-servers.js';
import type { SessionCeiling } from './session-ceiling.js';

export interface ToolCaller {
  readonly token: string;
  readonly tenant_id: string;
}

export interface ToolResult {
  content: { type: 'text'; text: string }[];
  isError?: boolean;
  _meta: Record<string, unknown>;
  [key: string]: unknown;
}

/** How often the record is re-read while waiting, in case the end notification was lost. */
const RECHECK_MS = 1_000;
/** Beyond the tool's own timeout: admission, queueing and settlement. */
const WAIT_MARGIN_MS = 30_000;

export class ToolCalls {
  constructor(
    private readonly rt: OrchestratorRuntime,
    private readonly submission: WorkSubmission,
    private readonly servers: ToolServers,
  ) {}

  async call(
    caller: ToolCaller,
    sessionId: string,
    server: string,
    tool: string,
    args: Record<string, unknown>,
    ceiling?: SessionCeiling,
  ): Promise<ToolResult> {
    const workId = randomUUID();
    if (ceiling && !ceiling.take())
      return errorResult(`refused: the session's dispatch ceiling of ${ceiling.max} is reached`, {
        'tally/work_id': workId,
      });
    const result = await this.run(caller, sessionId, server, tool, args, workId);
    // Only a call that reached the tool server (an attempt) counts; an undecided one keeps its dispatch.
    if (ceiling && result.dispatched === false) ceiling.giveBack();
    return result.answer;
  }

  private async run(
    caller: ToolCaller,
    sessionId: string,
    server: string,
    tool: string,
    args: Record<string, unknown>,
    workId: string,
  ): Promise<{ answer: ToolResult; dispatched: boolean | undefined }> {
    const config = this.servers.config(server)!;
    const { nats } = this.rt.ctx;
    const live = new LiveReply(nats.nc, nats.names.workLiveSubject(workId));
    try {
      const submitted = await this.rt.units.submit({
        work_id: workId,
        session_id: sessionId,
        purpose: 'tool_call',
        token: caller.token,
        tenant_id: caller.tenant_id,
        route: [{ provider: server, model: tool }],
        messages: [{ role: 'user', content: JSON.stringify(args) }],
        limits: { max_retries: 0, run_retry_attempts: 0, max_tokens: 1, timeout_ms: config.timeout_ms },
        entrypoint: 'mcp',
        options: { tool_call: { name: tool, arguments: args } },
      });
      if (!submitted.ok)
        return {
          answer: errorResult(`refused: ${submitted.rejection.message}`, { 'tally/work_id': workId }),
          dispatched: false,
        };
      await nats.nc.flush();
      await this.submission.enqueue(workId, caller.token, 'end');
      const state = await this.waitForEnd(live, workId, config.timeout_ms + WAIT_MARGIN_MS);
      const dispatched = state.attempts.length > 0 ? true : isTerminal(state) ? false : undefined;
      return { answer: resultOf(workId, state), dispatched };
    } finally {
      live.close();
    }
  }

  private async waitForEnd(live: LiveReply, workId: string, waitMaxMs: number): Promise<WorkUnitState> {
    const deadline = Date.now() + waitMaxMs;
    for (;;) {
      const message = await live.next(Math.min(RECHECK_MS, Math.max(1, deadline - Date.now())));
      const state = (await this.rt.repository.load(workId)).state;
      if ((message?.kind === 'end' || Date.now() >= deadline) && isTerminal(state)) return state;
      if (isTerminal(state) || Date.now() >= deadline) return state;
    }
  }
}

function resultOf(workId: string, state: WorkUnitState): ToolResult {
  const attempt = state.attempts[0];
  const meta: Record<string, unknown> = { 'tally/work_id': workId };
  if (attempt) meta['tally/receipt_id'] = attempt.hold_id;
  if (state.status === 'completed' && state.completion) {
    let result: Record<string, unknown>;
    try {
      result = JSON.parse(state.completion.output) as Record<string, unknown>;
    } catch {
      result = { content: [{ type: 'text', text: state.completion.output }] };
    }
    const own =
      typeof result['_meta'] === 'object' && result['_meta'] !== null
        ? (result['_meta'] as Record<string, unknown>)
        : {};
    return { ...(result as ToolResult), _meta: { ...own, ...meta } };
  }
  if (state.status === 'failed' && state.failure) {
    const f = state.failure;
    const why =
      f.code === 'admission_denied' ? `refused by the budget authority: ${reasonCode(f.reason ?? 'denied')}` : f.error;
    const settled = attempt?.settled;
    const text =
      settled?.domain === 'deadline'
        ? `the tool server did not answer in time; the call was cut off and stays charged: ${settled.error}`
        : why;
    return errorResult(text, meta);
  }
  if (state.status === 'aborted') return errorResult(`aborted: ${state.aborted?.reason ?? ''}`, meta);
  return errorResult(`the tool call did not end in time; it goes on, see GET /v1/work/${workId}`, meta);
}

function errorResult(text: string, meta: Record<string, unknown>): ToolResult {
  return { content: [{ type: 'text', text }], isError: true, _meta: meta };
}
