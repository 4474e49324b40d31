// BudgetAuthority: the one object the budget-authority app (HTTP, NATS commands) and the
// tests drive. It is built from ports and explicit limits; it holds the per-tree cache
// and queue, so one instance per process.
import type { NonceBinding } from '@tally/budget-domain';
import type { EventStore } from '@tally/eventing';
import { admit } from './admit/admit.handler.js';
import type { AdmitCommand } from './admit/admit-flow.js';
import {
  rootOfCapability,
  UNVERIFIED_TREE,
  type AuthorityContext,
  type BudgetAuthorityLimits,
} from './authority-context.js';
import {
  capabilityEvents,
  capabilityUsage,
  issueCapability,
  revokeCapability,
  type IssueCapabilityCommand,
  type IssuedCapability,
  type Result,
  type Revoked,
} from './capability.handlers.js';
import { expireHolds, type Expired } from './expire.handler.js';
import { increaseHold, type IncreaseCommand, type IncreaseResult } from './increase.handler.js';
import { periodUsage } from './usage-periods.js';
import type { AdmissionHook, Clock, IdGenerator, PaymentRail, PublicKeyDescription, Signer } from './ports.js';
import { allowAllAdmissionHook } from './ports.js';
import { decisionFrom, rootOfReceiptId, signedReceipt, type AdmitDecision, type SignedReceipt } from './receipts.js';
import { reconcile, type Resolution } from './reconcile.handler.js';
import { settle, type SettleCommand, type SettleResult } from './settle.handler.js';
import { realizeUnsettled, type RealizedUnsettled } from './unsettled.handler.js';
import { unwindStranded, type Unstranded } from './stranded.handler.js';
import { openToken, verifyProof, type AdmissionProof, type NonceClaims } from './tokens.js';
import { TreeStore, type TreeStoreSleep } from './tree-store.js';

export interface BudgetAuthorityPorts {
  readonly store: EventStore;
  /** The JetStream subject of a tree, e.g. tallyNames(ns).budgetEventSubject. */
  readonly subjectOf: (rootId: string) => string;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly rail: PaymentRail;
  readonly signer: Signer;
  readonly hook?: AdmissionHook;
  /** How the tree store waits between re-reads after a lost acknowledgement (default: a timer). */
  readonly sleep?: TreeStoreSleep;
}

export class BudgetAuthority {
  private readonly ctx: AuthorityContext;
  /**
   * Commands running in this process, by kind and command id: a re-send that arrives while
   * the first is still running (the caller timed out and retried) waits for that answer
   * instead of racing it. Entries live only while a command runs, so the map is bounded by
   * the transport's concurrency. Across processes, the ledger settles the race (one receipt).
   */
  private readonly running = new Map<string, Promise<unknown>>();

  constructor(ports: BudgetAuthorityPorts, limits: BudgetAuthorityLimits) {
    const trees = new TreeStore(ports.store, ports.subjectOf, ports.clock, limits, ports.sleep);
    this.ctx = {
      trees,
      signer: ports.signer,
      rail: ports.rail,
      hook: ports.hook ?? allowAllAdmissionHook,
      clock: ports.clock,
      ids: ports.ids,
      limits,
    };
  }

  issue(command: IssueCapabilityCommand): Promise<Result<IssuedCapability>> {
    return issueCapability(this.ctx, command);
  }

  delegate(command: IssueCapabilityCommand & { readonly parent_id: string }): Promise<Result<IssuedCapability>> {
    return issueCapability(this.ctx, command);
  }

  revoke(capabilityId: string): Promise<Result<Revoked>> {
    return revokeCapability(this.ctx, capabilityId);
  }

  admit(command: AdmitCommand): Promise<AdmitDecision> {
    return this.once(`admit:${command.command_id}`, () => admit(this.ctx, command));
  }

  settle(command: SettleCommand): Promise<SettleResult> {
    return this.once(`settle:${command.command_id}`, () => settle(this.ctx, command));
  }

  /** Raises an open hold within its grant; each increase is an event with its own receipt. */
  increase(command: IncreaseCommand): Promise<IncreaseResult> {
    return this.once(`increase:${command.command_id}`, () => increaseHold(this.ctx, command));
  }

  /** The period containing `atMs` of each grant with a reset, with its figures (default: now). */
  periodUsage(capabilityId: string, atMs?: number, previous = false) {
    return periodUsage(this.ctx, capabilityId, atMs ?? this.ctx.clock.nowMs(), previous);
  }

  private once<T>(key: string, run: () => Promise<T>): Promise<T> {
    const running = this.running.get(key);
    if (running) return running as Promise<T>;
    const started = run().finally(() => this.running.delete(key));
    this.running.set(key, started);
    return started;
  }

  usage(capabilityId: string) {
    return capabilityUsage(this.ctx, capabilityId);
  }

  events(capabilityId: string, query: { grant_index?: number; limit: number }) {
    return capabilityEvents(this.ctx, capabilityId, query);
  }

  async receipt(receiptId: string): Promise<SignedReceipt | undefined> {
    const rootId = rootOfReceiptId(receiptId);
    if (rootId === undefined) return undefined;
    const record = (await this.ctx.trees.read(rootId)).receipts.get(receiptId);
    return record ? signedReceipt(record) : undefined;
  }

  /** Every receipt of a tree, oldest first: what a replay or an audit re-verifies. */
  async receipts(rootId: string): Promise<SignedReceipt[]> {
    return (await this.ctx.trees.read(rootId)).receipts.inOrder().map(signedReceipt);
  }

  /** The decision a command got, if it was answered. */
  async decisionFor(rootId: string, commandId: string): Promise<AdmitDecision | undefined> {
    const state = await this.ctx.trees.read(rootId);
    const id = state.command_receipts.get(commandId);
    const record = id === undefined ? undefined : state.receipts.get(id);
    return record ? decisionFrom(record) : undefined;
  }

  keys(): PublicKeyDescription[] {
    return this.ctx.signer.publicKeys();
  }

  /** The orchestrator's check before a monetary dispatch: no valid proof, no dispatch. */
  verifyAdmissionProof(proof: AdmissionProof): boolean {
    return verifyProof(this.ctx.signer, proof);
  }

  /**
   * Verifies and consumes an execution nonce outside an Admit (e.g. at the tool server).
   * Returns false when the nonce is invalid, expired or already consumed.
   */
  async redeemNonce(token: string): Promise<boolean> {
    const claims = openToken<NonceClaims>(this.ctx.signer, 'n1', token);
    if (!claims) return false;
    const nonce: { nonce_id: string; binding: NonceBinding; expires_at_ms: number } = {
      nonce_id: claims.nonce_id,
      binding: claims.binding,
      expires_at_ms: claims.expires_at_ms,
    };
    const out = await this.ctx.trees.step(rootOfCapability(claims.binding.capability_id), () => [
      { type: 'ConsumeNonce', nonce, now_ms: this.ctx.clock.nowMs() },
    ]);
    return out.kind === 'committed' && out.events.length > 0;
  }

  /** B20: reverses expired uncaptured holds of the given trees (default: every tree this process has loaded). */
  expireHolds(rootIds?: readonly string[]): Promise<Expired[]> {
    return expireHolds(this.ctx, rootIds ?? this.ctx.trees.knownRoots().filter((id) => id !== UNVERIFIED_TREE));
  }

  /**
   * B20 (ADR 0047): realizes in full the admitted holds of the given trees whose settlement has not
   * come within their TTL and the grace (default: every tree this process has loaded).
   */
  realizeUnsettled(rootIds?: readonly string[]): Promise<RealizedUnsettled[]> {
    return realizeUnsettled(this.ctx, rootIds ?? this.ctx.trees.knownRoots().filter((id) => id !== UNVERIFIED_TREE));
  }

  /**
   * B20, B21 (ADR 0059): unwinds captured holds never admitted whose command is answered deny, and
   * releases the leases of closed holds nobody released (default: every tree this process has loaded).
   */
  unwindStranded(rootIds?: readonly string[]): Promise<Unstranded[]> {
    return unwindStranded(this.ctx, rootIds ?? this.ctx.trees.knownRoots().filter((id) => id !== UNVERIFIED_TREE));
  }

  /** B21: resolves the recorded ambiguities of one tree from the stream and the rail. */
  reconcile(rootId: string): Promise<Resolution[]> {
    return reconcile(this.ctx, rootId);
  }

  /** The tree as this process holds it in memory, without a read: for audits that compare it with a replay. */
  cachedTree(rootId: string) {
    return this.ctx.trees.peek(rootId);
  }

  /** The tree's folded state: for audits and tests. */
  treeState(rootId: string) {
    return this.ctx.trees.read(rootId);
  }
}
