// The dispatch worker: works one unit until it ends. Each loop plans the next step in the
// domain and commits it as an event conditioned on the sequence the plan was made on, so a
// redelivered or racing worker re-plans instead of running an ordinal twice or dispatching
// past the ceiling. The view a successful append returns is carried to the next step (no
// reload: if anyone else wrote meanwhile, that step's append conflicts and the loop
// reloads). Every paid call is admitted first and settled after.
import {
  planNext,
  promptTokenBound,
  type AttemptOutcome,
  type DispatchStep,
  type NextStep,
  type RefuseAttempt,
  type WorkCommand,
  type WorkUnitState,
} from '@tally/orchestrator-domain';
import { attemptOutcomeOf, outcomeOfGatewayFault, settleOutcomeOf } from './attempt-outcome.mapping.js';
import { callParametersHash, dispatchMessages } from './call-parameters.js';
import { credentialFor } from './credential.js';
import { admitFitted, fittedRequest, maxTokensFor } from './fitted-admission.js';
import type {
  AdmissionProofWire,
  AdmitDecision,
  BudgetPort,
  Clock,
  DispatchDelta,
  IdSource,
  JitterSource,
  ModelPrice,
  PriceTable,
  PromptProfiles,
  ProviderGateway,
  OutputStore,
  Sleep,
} from './ports.js';
import {
  boundOutcome,
  encodeOutputBlob,
  inlineFallback,
  referencedOutcome,
  type OutputLimits,
} from './output-by-reference.js';
import type { AppendOutcome, WorkUnitRepository, WorkUnitView } from './work-unit.repository.js';

export interface DispatchWorkerOptions {
  /** Bound on plan-and-act iterations in one `process` call; one attempt takes about four. */
  readonly stepsMax: number;
  /** How often the unit is checked for an abort (or another writer) during a dispatch or a backoff. */
  readonly abortPollMs: number;
  /** Bound on reload-and-retry when recording an attempt's outcome meets a concurrent append. */
  readonly conflictRetriesMax: number;
  /**
   * How long the outcome of a call that was made (and so paid) is re-sent while the event
   * store refuses writes, e.g. while a stream elects a new leader. Giving up sooner means a
   * redelivery settles the attempt unknown and calls the provider again. 0 or absent: no re-send.
   * Keep it below the work queue's ack wait, so no other worker takes the unit meanwhile.
   */
  readonly recordRetryMs?: number;
}

/** First and longest pause between re-sends of an attempt's outcome. */
const RECORD_PAUSE_MIN_MS = 100;
const RECORD_PAUSE_MAX_MS = 2_000;

export interface DispatchWorkerDeps {
  readonly repository: WorkUnitRepository;
  readonly gateway: ProviderGateway;
  readonly budget: BudgetPort;
  readonly prices: PriceTable;
  /** What each model makes of a prompt (ADR 0042); absent, every prompt is bounded by its bytes. */
  readonly prompts?: PromptProfiles;
  readonly clock: Clock;
  readonly jitter: JitterSource;
  readonly sleep: Sleep;
  readonly newId: IdSource;
  readonly options: DispatchWorkerOptions;
  /**
   * Where a reply too large for its event goes (ADR 0019). Absent: every reply is recorded
   * inline, which only a store whose messages are unbounded can take.
   */
  readonly outputs?: { readonly store: OutputStore; readonly limits: OutputLimits };
}

export interface ProcessOptions {
  /** The caller cancels this unit: the dispatch in flight is aborted and the work ends Aborted. */
  readonly signal?: AbortSignal;
  /** Called while long steps run, so the queue message's ack deadline can be extended. */
  readonly onProgress?: () => void;
  /**
   * The capability token delivered with the work-queue message. The ledger holds only its
   * fingerprint (ADR 0007), so this is the one place the worker can get it from.
   */
  readonly credential?: string;
  /** Called with each streamed piece of the reply as the provider emits it, with the attempt's ordinal. */
  readonly onDelta?: (ordinal: number, delta: DispatchDelta) => void;
}

export type ProcessResult =
  | {
      readonly kind: 'ended';
      readonly work_id: string;
      readonly status: 'completed' | 'failed' | 'aborted';
      readonly output?: string;
      readonly error?: string;
      /** The unit as it ended, for whoever answers its caller from it. */
      readonly state: WorkUnitState;
    }
  | { readonly kind: 'not_found'; readonly work_id: string }
  /** Another worker owns the unit right now; retry the message later (nak with delay). */
  | { readonly kind: 'superseded'; readonly work_id: string; readonly reason: string };

/** `view`, when present, is the unit right after this step's own append: the next step plans on it. */
type StepResult =
  | { readonly kind: 'continue'; readonly view?: WorkUnitView }
  | { readonly kind: 'superseded'; readonly reason: string };
const CONTINUE: StepResult = { kind: 'continue' };
const CALL_ENDED = 'the provider call ended';

/** Continue on the appended view; after a conflict or a rejection, with a fresh load. */
function continueAfter(outcome: AppendOutcome): StepResult {
  return outcome.kind === 'appended' ? { kind: 'continue', view: outcome.view } : CONTINUE;
}

/** Command ids derived from (work, ordinal) make admit and settle idempotent across workers and redeliveries. */
export const budgetCommandIds = (workId: string, ordinal: number) => ({
  request_id: `${workId}:attempt:${ordinal}`,
  admit: `${workId}:attempt:${ordinal}:admit`,
  settle: `${workId}:attempt:${ordinal}:settle`,
});

/** Admission proofs kept between admission and settlement; the oldest goes first beyond this. */
const PROOFS_MAX = 10_000;

export class DispatchWorker {
  private readonly proofs = new Map<string, AdmissionProofWire>();

  constructor(private readonly deps: DispatchWorkerDeps) {
    if (!(deps.options.stepsMax >= 1 && deps.options.abortPollMs >= 1 && deps.options.conflictRetriesMax >= 1))
      throw new Error('DispatchWorker options must all be >= 1');
  }

  async process(workId: string, options: ProcessOptions = {}): Promise<ProcessResult> {
    let carried: WorkUnitView | undefined;
    for (let step = 0; step < this.deps.options.stepsMax; step++) {
      const view = carried ?? (await this.deps.repository.load(workId));
      carried = undefined;
      const jitter = this.deps.jitter();
      const plan = planNext(view.state, jitter);
      options.onProgress?.();
      if (plan.kind === 'idle') return resultOf(workId, view.state);
      if (options.signal?.aborted && !view.state.abort) {
        const aborted = await this.apply(workId, view, { type: 'RequestAbort', reason: 'aborted by caller' });
        carried = aborted.kind === 'appended' ? aborted.view : undefined;
        continue;
      }
      const result = await this.act(workId, view, plan, jitter, options);
      if (result.kind === 'superseded') return { kind: 'superseded', work_id: workId, reason: result.reason };
      carried = result.view;
    }
    throw new Error(`work ${workId} did not end within stepsMax=${this.deps.options.stepsMax} steps`);
  }

  private async act(
    workId: string,
    view: WorkUnitView,
    plan: Exclude<NextStep, { kind: 'idle' }>,
    jitter: number,
    options: ProcessOptions,
  ): Promise<StepResult> {
    switch (plan.kind) {
      case 'settle_orphan':
        // Found on redelivery: the worker that started it is gone. It may have been billed, so it counts.
        return continueAfter(await this.apply(workId, view, { type: 'SettleOrphanedAttempt', ordinal: plan.ordinal }));
      case 'settle_hold': {
        const attempt = view.state.attempts[plan.ordinal];
        if (!attempt) throw new Error(`work ${workId}: hold step for missing attempt ${plan.ordinal}`);
        await this.deps.budget.settle({
          command_id: budgetCommandIds(workId, plan.ordinal).settle,
          hold_id: plan.hold_id,
          outcome: settleOutcomeOf(attempt, plan),
          ...this.settleProof(plan.hold_id, requireWork(view.state).token_fingerprint, options),
        });
        this.proofs.delete(plan.hold_id);
        // The hold was the last thing outside this unit; if the unit can end now, it ends in the same commit.
        const settled = this.command({ type: 'RecordHoldSettled', ordinal: plan.ordinal, hold_id: plan.hold_id });
        return continueAfter(
          await this.deps.repository.applyChain(workId, view, settled, (state) =>
            options.signal?.aborted ? undefined : this.conclusionFor(state),
          ),
        );
      }
      case 'complete':
      case 'abort':
      case 'fail':
        return continueAfter(await this.apply(workId, view, { type: 'ConcludeWork' }));
      case 'dispatch':
        return this.dispatchAttempt(workId, view, plan, jitter, options);
    }
  }

  private async dispatchAttempt(
    workId: string,
    view: WorkUnitView,
    plan: DispatchStep,
    jitter: number,
    options: ProcessOptions,
  ): Promise<StepResult> {
    const work = requireWork(view.state);
    const { provider, model } = plan.leg;
    const checked = this.admissible(work, plan, options);
    if (!checked.ok) return this.refuse(workId, view, plan.ordinal, checked.code, checked.error);
    const { price, promptTokens, token } = checked;
    if (await this.waitBackoff(workId, view, plan, options)) return CONTINUE;
    const ids = budgetCommandIds(workId, plan.ordinal);
    const context = {
      kind: 'work_unit',
      work_id: workId,
      session_id: work.session_id,
      purpose: work.purpose,
      ordinal: plan.ordinal,
    } as const;
    // Hashed once per attempt: the unit's max_tokens is the most the call asks for (a fitted hold only lowers it).
    const parameters_hash = callParametersHash({
      provider,
      model,
      messages: dispatchMessages(work.messages),
      max_tokens: work.limits.max_tokens,
      ...(work.options === undefined ? {} : { options: work.options }),
    });
    const base = { command_id: ids.admit, request_id: ids.request_id, token: token ?? '', server_id: provider };
    const request = fittedRequest(
      { ...base, tool_name: model, parameters_hash, context },
      price,
      promptTokens,
      work.limits.max_tokens,
    );
    const admission = await admitFitted(this.deps.budget, this.deps.sleep, request, work.limits, options.signal);
    const cost = admission.hold_units ?? request.requested_cost_units;
    const maxTokens =
      admission.hold_units === undefined
        ? work.limits.max_tokens
        : maxTokensFor(price, promptTokens, admission.hold_units, work.limits.max_tokens);
    if (admission.verdict !== 'allow' || !admission.hold_id) return this.refuseDenied(workId, view, plan, admission);
    const started = await this.apply(workId, view, {
      type: 'StartAttempt',
      ordinal: plan.ordinal,
      jitter,
      hold_id: admission.hold_id,
      hold_cost_units: cost,
      price,
    });
    if (admission.admission_proof !== undefined) this.rememberProof(admission.hold_id, admission.admission_proof);
    if (started.kind !== 'appended') return this.afterLostStart(workId, plan.ordinal, admission.hold_id, token);
    const outcome = await this.keepOutput(
      workId,
      plan.ordinal,
      await this.callProvider(workId, started.view, plan, options, maxTokens),
      options,
    );
    const settle = this.command({ type: 'SettleAttempt', ordinal: plan.ordinal, outcome });
    const recorded = await this.recordOutcome(workId, started.view, settle, options);
    if (recorded.kind === 'rejected')
      return {
        kind: 'superseded',
        reason: `attempt ${plan.ordinal} was settled by another worker: ${recorded.rejection.message}`,
      };
    return { kind: 'continue', view: recorded.view };
  }

  /**
   * What an attempt needs before it may ask for a hold: the model's price, a bound on its
   * prompt there (ADR 0042), and the capability token. Without any of them it is refused.
   */
  private admissible(
    work: NonNullable<WorkUnitState['work']>,
    plan: DispatchStep,
    options: ProcessOptions,
  ):
    | { readonly ok: true; readonly price: ModelPrice; readonly promptTokens: number; readonly token?: string }
    | { readonly ok: false; readonly code: RefuseAttempt['code']; readonly error: string } {
    const { provider, model } = plan.leg;
    const price = this.deps.prices.priceOf(provider, model);
    if (!price) {
      const error = `model ${model} of provider ${provider} has no price: refused, never dispatched without a hold`;
      return { ok: false, code: 'unpriced_model', error };
    }
    const prompt = promptTokenBound(work.messages, work.options, this.deps.prompts?.profileOf(provider, model));
    if (!prompt.ok) {
      const error = `${prompt.field}: ${prompt.message} (${provider}/${model}): refused, never dispatched without a hold that covers it`;
      return { ok: false, code: 'invalid_work', error };
    }
    const token = credentialFor(work.token_fingerprint, options.credential);
    if (token === undefined && this.deps.budget.credentialRequired !== false) {
      const error =
        'the capability token did not reach the worker with this unit (the ledger keeps only its fingerprint): refused, never dispatched without admission; submit the work again under a new work id';
      return { ok: false, code: 'credential_unavailable', error };
    }
    return { ok: true, price, promptTokens: prompt.tokens, ...(token === undefined ? {} : { token }) };
  }

  /** The authority said no (or allowed without a hold id): the unit fails with its reason, nothing dispatched. */
  private async refuseDenied(
    workId: string,
    view: WorkUnitView,
    plan: DispatchStep,
    admission: AdmitDecision,
  ): Promise<StepResult> {
    const why =
      admission.verdict === 'allow'
        ? 'allowed without a hold id, which cannot be settled'
        : (admission.reason ?? 'no reason given');
    return continueAfter(
      await this.apply(workId, view, {
        type: 'RefuseAttempt',
        ordinal: plan.ordinal,
        code: 'admission_denied',
        error: `admission denied by the budget authority: ${why}`,
        ...(admission.reason === undefined ? {} : { reason: admission.reason.slice(0, 128) }),
        ...(admission.retry_after_ms === undefined ? {} : { retry_after_ms: admission.retry_after_ms }),
      }),
    );
  }

  /** Ends the unit before this attempt is admitted or dispatched: nothing was held or sent. */
  private async refuse(
    workId: string,
    view: WorkUnitView,
    ordinal: number,
    code: RefuseAttempt['code'],
    error: string,
  ): Promise<StepResult> {
    return continueAfter(await this.apply(workId, view, { type: 'RefuseAttempt', ordinal, code, error }));
  }

  /**
   * Records a made call's outcome: first on the view the attempt started from, and only if
   * someone wrote meanwhile (an abort) reloaded. While the store refuses writes it re-sends
   * within recordRetryMs, telling the queue the delivery is still worked. A re-send after a
   * write that landed unacknowledged conflicts, and the reload then finds the attempt settled.
   */
  private async recordOutcome(
    workId: string,
    view: WorkUnitView,
    settle: WorkCommand,
    options: ProcessOptions,
  ): Promise<Exclude<AppendOutcome, { kind: 'conflict' }>> {
    const deadline = this.deps.clock.nowMs() + (this.deps.options.recordRetryMs ?? 0);
    let from: WorkUnitView | undefined = view;
    for (let pause = RECORD_PAUSE_MIN_MS; ; pause = Math.min(2 * pause, RECORD_PAUSE_MAX_MS)) {
      try {
        const first = from
          ? await this.deps.repository.applyChain(workId, from, settle, (state) => this.localFollowUp(state, options))
          : ({ kind: 'conflict' } as const);
        return first.kind === 'conflict'
          ? await this.deps.repository.execute(workId, settle, this.deps.options.conflictRetriesMax)
          : first;
      } catch (error) {
        if (this.deps.clock.nowMs() + pause > deadline) throw error;
        // The first write may have landed: from now on decide on what the stream holds.
        from = undefined;
        options.onProgress?.();
        await this.deps.sleep(pause);
      }
    }
  }

  /**
   * Makes a made call's outcome recordable: a reply too large for its event is written to the
   * output store first (re-sent like the outcome itself while the store refuses writes) and
   * the outcome then names it. If it cannot be written in time, the outcome keeps what fits.
   */
  private async keepOutput(
    workId: string,
    ordinal: number,
    raw: AttemptOutcome,
    options: ProcessOptions,
  ): Promise<AttemptOutcome> {
    const outputs = this.deps.outputs;
    if (!outputs) return raw;
    const { outcome, blob } = boundOutcome(raw, outputs.limits);
    if (!blob) return outcome;
    const bytes = encodeOutputBlob(blob);
    const deadline = this.deps.clock.nowMs() + (this.deps.options.recordRetryMs ?? 0);
    for (let pause = RECORD_PAUSE_MIN_MS; ; pause = Math.min(2 * pause, RECORD_PAUSE_MAX_MS)) {
      try {
        return referencedOutcome(outcome, await outputs.store.put(workId, ordinal, bytes), outputs.limits);
      } catch {
        if (this.deps.clock.nowMs() + pause > deadline) return inlineFallback(outcome, outputs.limits);
        options.onProgress?.();
        await this.deps.sleep(pause);
      }
    }
  }

  /**
   * Our StartAttempt lost to a concurrent append. If another worker started this ordinal it
   * owns the unit (and shares our hold, by the admit command id). If the unit moved on
   * without it (an abort), the hold we took will never be used and is released.
   */
  private async afterLostStart(
    workId: string,
    ordinal: number,
    holdId: string,
    token: string | undefined,
  ): Promise<StepResult> {
    const fresh = await this.deps.repository.load(workId);
    if (fresh.state.attempts.length > ordinal)
      return { kind: 'superseded', reason: `attempt ${ordinal} was started by another worker` };
    const plan = planNext(fresh.state, 0);
    if (plan.kind !== 'dispatch' || plan.ordinal !== ordinal) {
      await this.deps.budget.settle({
        command_id: budgetCommandIds(workId, ordinal).settle,
        hold_id: holdId,
        outcome: { kind: 'not_dispatched', reason: 'the work unit moved on before this attempt was started' },
        ...this.proofOf(holdId, token),
      });
    }
    this.proofs.delete(holdId);
    return CONTINUE;
  }

  /** Kept from admission to settlement in this process; a redelivered unit settles with its token instead. */
  private rememberProof(holdId: string, proof: AdmissionProofWire): void {
    this.proofs.set(holdId, proof);
    if (this.proofs.size > PROOFS_MAX) this.proofs.delete(this.proofs.keys().next().value!);
  }

  private settleProof(holdId: string, fingerprint: string, options: ProcessOptions) {
    return this.proofOf(holdId, credentialFor(fingerprint, options.credential));
  }

  private proofOf(holdId: string, token: string | undefined) {
    const proof = this.proofs.get(holdId);
    return { ...(proof === undefined ? {} : { admission_proof: proof }), ...(token === undefined ? {} : { token }) };
  }

  private async callProvider(
    workId: string,
    view: WorkUnitView,
    plan: DispatchStep,
    options: ProcessOptions,
    maxTokens: number,
  ): Promise<AttemptOutcome> {
    const work = requireWork(view.state);
    const abort = new AbortController();
    const stopWatching = new AbortController();
    const onCallerAbort = () => abort.abort();
    options.signal?.addEventListener('abort', onCallerAbort, { once: true });
    if (options.signal?.aborted) abort.abort();
    const watching = this.watchForAbort(
      workId,
      view.lastSequence,
      stopWatching.signal,
      () => abort.abort(),
      options.onProgress,
    );
    const startedMs = this.deps.clock.nowMs();
    try {
      const request = {
        provider: plan.leg.provider,
        model: plan.leg.model,
        messages: dispatchMessages(work.messages),
        max_tokens: maxTokens,
        timeout_ms: work.limits.timeout_ms,
        ...(work.options === undefined ? {} : { options: work.options }),
      };
      const onDelta = options.onDelta;
      const deltas = onDelta ? (delta: DispatchDelta) => onDelta(plan.ordinal, delta) : undefined;
      return attemptOutcomeOf(await this.deps.gateway.dispatch(request, abort.signal, options.onProgress, deltas));
    } catch (error) {
      return outcomeOfGatewayFault(error, this.deps.clock.nowMs() - startedMs);
    } finally {
      // A plain reason: the default one is a DOMException, whose stack is captured on every call.
      stopWatching.abort(CALL_ENDED);
      options.signal?.removeEventListener('abort', onCallerAbort);
      await watching;
    }
  }

  /** Polls the unit's subject while a call runs; an AbortRequested there aborts the call. */
  private async watchForAbort(
    workId: string,
    afterSequence: number,
    stop: AbortSignal,
    onAbort: () => void,
    onProgress: (() => void) | undefined,
  ): Promise<void> {
    while (!stop.aborted) {
      await this.deps.sleep(this.deps.options.abortPollMs, stop);
      if (stop.aborted) return;
      onProgress?.();
      try {
        const fresh = await this.deps.repository.eventsAfter(workId, afterSequence);
        if (fresh.some((e) => e.type === 'AbortRequested')) return onAbort();
      } catch {
        // A failed poll only delays noticing an abort: the next append is conditioned on the
        // sequence and would conflict with it anyway, so the call is not failed for this.
      }
    }
  }

  /** Waits out the planned backoff. Returns true when the unit changed meanwhile and must be re-planned. */
  private async waitBackoff(
    workId: string,
    view: WorkUnitView,
    plan: DispatchStep,
    options: ProcessOptions,
  ): Promise<boolean> {
    if (plan.backoff_ms <= 0 || plan.wait_from === undefined) return false;
    const until = Date.parse(plan.wait_from) + plan.backoff_ms;
    const pollMs = this.deps.options.abortPollMs;
    const slicesMax = Math.ceil(plan.backoff_ms / pollMs) + 1;
    for (let slice = 0; slice < slicesMax; slice++) {
      const remaining = until - this.deps.clock.nowMs();
      if (remaining <= 0) return false;
      await this.deps.sleep(Math.min(remaining, pollMs), options.signal);
      options.onProgress?.();
      if (options.signal?.aborted) return true;
      if ((await this.deps.repository.eventsAfter(workId, view.lastSequence)).length > 0) return true;
    }
    return false;
  }

  /**
   * After an attempt is settled, the steps that need nobody outside the unit: the hold's
   * settlement when the budget settles locally (unmetered), then the conclusion. With a real
   * authority the hold is settled by a call first, so nothing follows here.
   */
  private localFollowUp(state: WorkUnitState, options: ProcessOptions): WorkCommand | undefined {
    if (!this.deps.budget.settlesLocally) return undefined;
    const plan = planNext(state, 0);
    if (plan.kind === 'settle_hold')
      return this.command({ type: 'RecordHoldSettled', ordinal: plan.ordinal, hold_id: plan.hold_id });
    return options.signal?.aborted ? undefined : this.conclusionFor(state);
  }

  /** ConcludeWork when the plan on `state` is to end the unit, else nothing. */
  private conclusionFor(state: WorkUnitState): WorkCommand | undefined {
    const kind = planNext(state, 0).kind;
    return kind === 'complete' || kind === 'abort' || kind === 'fail'
      ? this.command({ type: 'ConcludeWork' })
      : undefined;
  }

  private command(partial: DistributiveOmit<WorkCommand, 'command_id' | 'at'>): WorkCommand {
    return {
      ...partial,
      command_id: this.deps.newId(),
      at: new Date(this.deps.clock.nowMs()).toISOString(),
    } as WorkCommand;
  }

  /** Appends one decided step; a conflict or a rejection just means the loop reloads and re-plans. */
  private apply(
    workId: string,
    view: WorkUnitView,
    partial: DistributiveOmit<WorkCommand, 'command_id' | 'at'>,
  ): Promise<AppendOutcome> {
    return this.deps.repository.apply(workId, view, this.command(partial));
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

function requireWork(state: WorkUnitState): NonNullable<WorkUnitState['work']> {
  if (!state.work) throw new Error('work unit has not been submitted');
  return state.work;
}

function resultOf(workId: string, state: WorkUnitState): ProcessResult {
  if (state.status === 'completed')
    return {
      kind: 'ended',
      state,
      work_id: workId,
      status: 'completed',
      ...(state.completion ? { output: state.completion.output } : {}),
    };
  if (state.status === 'failed')
    return {
      kind: 'ended',
      state,
      work_id: workId,
      status: 'failed',
      ...(state.failure ? { error: state.failure.error } : {}),
    };
  if (state.status === 'aborted')
    return {
      kind: 'ended',
      state,
      work_id: workId,
      status: 'aborted',
      ...(state.aborted ? { error: state.aborted.reason } : {}),
    };
  return { kind: 'not_found', work_id: workId };
}
