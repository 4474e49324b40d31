// One drop-in call, whichever dialect: route the model, derive the work id (from the
// Idempotency-Key when sent), listen on the unit's live subject, submit and queue the unit,
// then answer from what the worker publishes (deltas as they come, when streaming) or from
// the record. A caller that goes away aborts its unit (O3). ADR 0036.
import type { NeutralError, NeutralRequest } from '@tally/orchestrator-dialects';
import {
  BYTE_BOUND_PROFILE,
  isTerminal,
  promptRefusal,
  type ChatMessage,
  type OpaqueJson,
  type RouteLeg,
} from '@tally/orchestrator-domain';
import { createHash, randomUUID } from 'node:crypto';
import { withWholeOutput, type PromptProfiles } from '@tally/orchestrator-application';
import type { OrchestratorRuntime } from '../orchestrator.runtime.js';
import { limitsFor, WorkSubmission } from '../work/work-submission.js';
import type { DialectWriter } from './dialect-writer.js';
import { LiveReply } from './live-reply.js';
import type { ModelCatalog } from './model-catalog.js';
import { answerStream, answerWhole, type HttpExchange } from './drop-in-answer.js';

export interface DropInCall {
  readonly entrypoint: 'chat_completions' | 'messages';
  readonly request: NeutralRequest;
  readonly writer: DialectWriter;
  readonly caller: { readonly token: string; readonly tenant_id: string; readonly capability_id: string };
  readonly idempotencyKey?: string;
  readonly sessionId?: string;
  readonly fallbacks?: string;
}

const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;
const IDEMPOTENCY_KEY_MAX_CHARS = 255;

/** The work id of a keyed call: the caller's scope and key, hashed, so the same retry finds the same unit. */
export function idempotentWorkId(tenantId: string, capabilityId: string, entrypoint: string, key: string): string {
  const digest = createHash('sha256').update(`${tenantId}\n${capabilityId}\n${entrypoint}\n${key}`).digest('base64url');
  return `gw-${digest}`;
}

/**
 * The longest retry-after a drop-in unit waits out itself. A caller's SDK holds the HTTP
 * request and has its own retry policy, so a longer rate limit (the grant's
 * requests_per_minute, a provider's long retry-after) is answered at once as a 429 with
 * retry-after instead of holding the connection for up to a minute (ADR 0036).
 */
export const DROP_IN_RETRY_AFTER_WAIT_MS = 1_000;

export class DropInGateway {
  constructor(
    private readonly rt: OrchestratorRuntime,
    private readonly submission: WorkSubmission,
    private readonly catalog: ModelCatalog,
    private readonly prompts: PromptProfiles,
  ) {}

  async handle(call: DropInCall, http: HttpExchange): Promise<void> {
    const refused = this.refusal(call);
    if (refused) return http.error(call.writer.error(refused));
    const routed = this.catalog.route(call.request.model, call.fallbacks);
    if (!routed.ok) return http.error(call.writer.error(routed.error));
    const unbounded = this.unbounded(call.request, routed.route);
    if (unbounded) return http.error(call.writer.error(unbounded));
    const workId =
      call.idempotencyKey === undefined
        ? randomUUID()
        : idempotentWorkId(call.caller.tenant_id, call.caller.capability_id, call.entrypoint, call.idempotencyKey);
    http.header('x-tally-work-id', workId);
    const { nats } = this.rt.ctx;
    const live = new LiveReply(nats.nc, nats.names.workLiveSubject(workId));
    // A caller that goes away wakes the wait at once, so its unit is aborted without delay.
    http.onGone(() => live.close());
    try {
      const submitted = await this.submit(call, workId, routed.route);
      if (!submitted.ok) return http.error(call.writer.error(submitted.error));
      if (isTerminal(submitted.state)) live.endFromState(await withWholeOutput(this.rt.outputs.store, submitted.state));
      else {
        // The subscription must be at the server before any worker can publish to it.
        await nats.nc.flush();
        await this.submission.enqueue(workId, call.caller.token, call.request.stream ? 'deltas' : 'end');
      }
      const waitMaxMs = this.waitMaxMs(call);
      const answered = call.request.stream
        ? await answerStream(live, http, call.writer, workId, call.request.model, waitMaxMs, () => this.load(workId))
        : await answerWhole(live, http, call.writer, workId, call.request.model, waitMaxMs, () => this.load(workId));
      if (answered === 'caller_gone') await this.submission.abort(workId).catch(() => undefined);
    } finally {
      live.close();
    }
  }

  private refusal(call: DropInCall): NeutralError | undefined {
    if (call.sessionId !== undefined && !SESSION_ID.test(call.sessionId))
      return {
        kind: 'invalid_request',
        field: 'x-tally-session-id',
        message: 'x-tally-session-id must be 1-64 characters of A-Z a-z 0-9 _ -',
      };
    if (
      call.idempotencyKey !== undefined &&
      (call.idempotencyKey.length === 0 || call.idempotencyKey.length > IDEMPOTENCY_KEY_MAX_CHARS)
    )
      return {
        kind: 'invalid_request',
        field: 'idempotency-key',
        message: `Idempotency-Key must be 1-${IDEMPOTENCY_KEY_MAX_CHARS} characters`,
      };
    return undefined;
  }

  /**
   * A prompt no hold can bound on some leg of the route (an image for a model that takes none,
   * a part the provider bills beyond its size) is a 400 before anything is submitted; the
   * worker refuses the same prompt too, for units that come in another way (ADR 0042).
   */
  private unbounded(request: NeutralRequest, route: readonly RouteLeg[]): NeutralError | undefined {
    const messages = request.messages.map(messageOf);
    const { options } = optionsOf(request);
    for (const leg of route) {
      const profile = this.prompts.profileOf(leg.provider, leg.model) ?? BYTE_BOUND_PROFILE;
      const refusal = promptRefusal(messages, options, profile);
      if (refusal)
        return {
          kind: 'invalid_request',
          field: refusal.field,
          message: `${refusal.field}: ${refusal.message} (${leg.provider}/${leg.model})`,
        };
    }
    return undefined;
  }

  private async submit(call: DropInCall, workId: string, route: RouteLeg[]) {
    const { request } = call;
    const result = await this.rt.units.submit({
      work_id: workId,
      session_id: call.sessionId ?? workId,
      purpose: 'execute',
      token: call.caller.token,
      tenant_id: call.caller.tenant_id,
      route,
      messages: request.messages.map(messageOf),
      limits: {
        ...limitsFor(
          this.rt.ctx.config,
          request.max_tokens === undefined ? undefined : { max_tokens: request.max_tokens },
        ),
        max_retry_after_ms: DROP_IN_RETRY_AFTER_WAIT_MS,
      },
      entrypoint: call.entrypoint,
      ...optionsOf(request),
    });
    if (result.ok) return result;
    const error: NeutralError =
      result.rejection.code === 'already_submitted'
        ? {
            kind: 'conflict',
            code: 'idempotency_conflict',
            field: 'idempotency-key',
            message: `Idempotency-Key ${JSON.stringify(call.idempotencyKey)} was already used with a different request`,
          }
        : { kind: 'invalid_request', message: result.rejection.message };
    return { ok: false as const, error };
  }

  /** The record, with a reply kept by reference read whole (ADR 0019): the caller gets all of it. */
  private async load(workId: string) {
    return withWholeOutput(this.rt.outputs.store, (await this.rt.repository.load(workId)).state);
  }

  /** Every attempt may run to its timeout; past that the caller is answered, and the unit goes on. */
  private waitMaxMs(call: DropInCall): number {
    const o = this.rt.ctx.config.orchestrator;
    const attempts = (o.max_retries + 1) * (o.run_retry_attempts + 1) * Math.max(1, call.fallbacks ? 2 : 1);
    return Math.min(o.timeout_ms * attempts + 30_000, 3_600_000);
  }
}

/** The unit's message: its text for the session projection, and its parts when they are more than text. */
function messageOf(m: NeutralRequest['messages'][number]): ChatMessage {
  let text = '';
  for (const p of m.parts) if (p.type === 'text') text += p.text;
  const plain = m.parts.every((p) => p.type === 'text');
  return { role: m.role, content: text, ...(plain ? {} : { parts: m.parts as unknown as OpaqueJson[] }) };
}

function optionsOf(request: NeutralRequest): { options?: OpaqueJson } {
  const options: Record<string, unknown> = {};
  if (request.tools && request.tools.length > 0) options['tools'] = request.tools;
  if (request.tool_choice) options['tool_choice'] = request.tool_choice;
  if (Object.keys(request.sampling).length > 0) options['sampling'] = request.sampling;
  if (request.passthrough) options['passthrough'] = request.passthrough;
  return Object.keys(options).length > 0 ? { options } : {};
}
