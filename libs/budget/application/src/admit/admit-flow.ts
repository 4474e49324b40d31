// One Admit, in the spec's order: verify the capability, match a grant, authorize the
// hold (one append), take the admission hook's lease, nonce preflight or presented-nonce
// check, capture (one append), authorize the payment, consume the nonce and allow (one
// append with the receipt). Every path ends in exactly one signed receipt.
import {
  EventIds,
  type AdmitContext,
  type BudgetCommand,
  type Hold,
  type NonceBinding,
  type TreeState,
} from '@tally/budget-domain';
import type { CapabilityClaims } from '../tokens.js';
import { Reasons, type AuthorityContext } from '../authority-context.js';
import { decisionFrom, type AdmitDecision, type DecisionExtras, type ReceiptMetadata } from '../receipts.js';
import { writeReceipt, type Written } from '../receipt-writer.js';

export interface AdmitCommand {
  /** The transport's retry key: the same command id always gets the same answer. */
  readonly command_id: string;
  readonly request_id: string;
  readonly token: string;
  readonly server_id: string;
  readonly tool_name: string;
  readonly parameters_hash: string;
  readonly requested_cost?: bigint;
  readonly execution_nonce?: string;
  readonly context: AdmitContext;
  /** Worst-case tokens of the call (tokens_per_minute). */
  readonly requested_tokens?: number;
  /** The smallest hold the caller can use; without it a hold is the requested cost or nothing. */
  readonly min_cost?: bigint;
}

/**
 * A run that cannot answer while its command's capture stands (ADR 0058): it would deny while
 * another run holds the capture, or its stream was full after the capture committed. No answer
 * is given, so the caller re-sends the command id and its re-run goes on from that capture.
 */
export class AdmissionOutstanding extends Error {
  override readonly name = 'AdmissionOutstanding';
  constructor(
    readonly commandId: string,
    why = 'another run of it holds a capture',
  ) {
    super(`command ${commandId} is not answered yet (${why}): re-send it to go on from its capture`);
  }
}

/** The mutable working set of one Admit; the steps live in admit-steps.ts. */
export class AdmitFlow {
  readonly meta: ReceiptMetadata = { budget_authority: {}, financial: {} };
  /** Facts learned from ports that ride along with the next append. */
  pending: BudgetCommand[] = [];
  hold: Hold | undefined;
  leaseId: string | undefined;
  payment: { authorization_id: string; mode: 'reversible_hold' | 'prepaid_final' } | undefined;
  nonce: { nonce_id: string; binding: NonceBinding; expires_at_ms: number } | undefined;
  /** The hold was captured by an earlier run of this command: the flow goes on from the payment. */
  resumed = false;
  /**
   * Another run of this command was answered first, and not with this run's allow: this run
   * only unwinds what it did, its facts go in without a receipt, and the answer is that one.
   */
  superseded: AdmitDecision | undefined;
  readonly preflight: boolean;

  constructor(
    readonly ctx: AuthorityContext,
    readonly cmd: AdmitCommand,
    readonly claims: CapabilityClaims,
  ) {
    this.preflight = ctx.limits.requireExecutionNonce && cmd.execution_nonce === undefined;
  }

  get root(): string {
    return this.claims.root_id;
  }

  get holdId(): string {
    return this.hold!.hold_id;
  }

  now(): number {
    return this.ctx.clock.nowMs();
  }

  refresh(state: TreeState): Hold {
    this.hold = state.holds.get(this.holdId) ?? this.hold!;
    return this.hold;
  }

  /** Releases the runtime lease, recording the outcome; false when the release is not confirmed. */
  async releaseLease(): Promise<boolean> {
    if (this.leaseId === undefined || this.hold === undefined) return true;
    const lease = { lease_id: this.leaseId, hold_id: this.holdId, request_id: this.cmd.request_id };
    const leaseId = this.leaseId;
    this.leaseId = undefined;
    try {
      await this.ctx.hook.release(lease);
      this.pending.push({
        type: 'RecordLease',
        hold_id: lease.hold_id,
        lease_id: leaseId,
        outcome: 'released',
        now_ms: this.now(),
      });
      this.meta.runtime = { ...this.meta.runtime, lease_id: leaseId, reservation_released: true };
      return true;
    } catch {
      // The hook's error text stays internal: the receipt only says the release was not confirmed.
      this.pending.push({
        type: 'RecordLease',
        hold_id: lease.hold_id,
        lease_id: leaseId,
        outcome: 'failed',
        now_ms: this.now(),
      });
      this.meta.runtime = {
        ...this.meta.runtime,
        lease_id: leaseId,
        reservation_release_failed: true,
        reservation_retained: true,
      };
      return false;
    }
  }

  recordAmbiguity(
    kind: Extract<BudgetCommand, { type: 'RecordAmbiguity' }>['kind'],
    eventId: string | undefined,
    present: ReadonlySet<string> | undefined,
  ): void {
    this.pending.push({
      type: 'RecordAmbiguity',
      kind,
      hold_id: this.holdId,
      ...(eventId === undefined ? {} : { event_id: eventId }),
      ...(eventId === undefined || present === undefined ? {} : { event_in_stream: present.has(eventId) }),
      reference: this.cmd.request_id,
      now_ms: this.now(),
    });
  }

  async deny(reason: string): Promise<AdmitDecision> {
    return this.answer('deny', reason, { dispatch: false });
  }

  /** Writes the receipt with the pending facts; if a fact no longer applies, the receipt still lands alone. */
  async answer(
    verdict: 'allow' | 'deny',
    reason: string,
    extras: DecisionExtras,
    facts: readonly BudgetCommand[] = [],
  ): Promise<AdmitDecision> {
    if (this.superseded) return this.recordWithoutReceipt([...this.pending, ...facts], this.superseded);
    let written = await this.tryAnswer(verdict, reason, extras, facts);
    if (written.kind === 'rejected') {
      this.pending = [];
      written = await this.tryAnswer(verdict, reason, extras, []);
    }
    if (written.kind === 'rejected' && written.rejection.code === 'capture_outstanding')
      throw new AdmissionOutstanding(this.cmd.command_id);
    if (written.kind === 'rejected')
      throw new Error(`receipt for ${this.cmd.command_id} was rejected: ${written.rejection.message}`);
    return written.decision;
  }

  /** The facts of a run whose command another run answered: true of the hold, so recorded, but under no receipt. */
  private async recordWithoutReceipt(facts: readonly BudgetCommand[], answer: AdmitDecision): Promise<AdmitDecision> {
    this.pending = [];
    if (facts.length > 0) await this.ctx.trees.step(this.root, () => facts);
    return answer;
  }

  /** Writes the receipt only together with the pending facts and `facts`; a rejection comes back to the caller. */
  async tryAnswer(
    verdict: 'allow' | 'deny',
    reason: string,
    extras: DecisionExtras,
    facts: readonly BudgetCommand[],
  ): Promise<{ kind: 'answered'; decision: AdmitDecision } | Extract<Written, { kind: 'rejected' }>> {
    const fields = {
      kind: 'admission' as const,
      verdict,
      reason,
      request_id: this.cmd.request_id,
      capability_id: this.claims.id,
      hold_id: this.hold?.hold_id ?? null,
      grant_index: this.hold?.grant_index ?? null,
      server_id: this.cmd.server_id,
      tool_name: this.cmd.tool_name,
      context: this.cmd.context,
      metadata: this.meta,
    };
    const written = await writeReceipt(
      this.ctx,
      this.root,
      this.cmd.command_id,
      fields,
      [...this.pending, ...facts],
      extras,
      !this.preflight && this.cmd.execution_nonce === undefined,
    );
    if (written.kind === 'rejected') return written;
    this.pending = [];
    const record = written.state.receipts.get(written.receipt.id);
    if (record) return { kind: 'answered', decision: decisionFrom(record) };
    const decision = {
      verdict,
      reason,
      ...(this.hold ? { hold_id: this.holdId, grant_index: this.hold.grant_index } : {}),
      ...extras,
      receipt: written.receipt,
    };
    return { kind: 'answered', decision };
  }

  captureEventId(): string {
    return EventIds.capture(this.holdId, this.hold!.authorize_commit_index);
  }

  captureSection(): NonNullable<ReceiptMetadata['budget_authority']['invocation_capture']> {
    this.meta.budget_authority.invocation_capture ??= {};
    return this.meta.budget_authority.invocation_capture;
  }
}

export { Reasons };
