// Appends a decision's receipt together with the last facts of its path, in one step.
// A command that was already answered (by this replica or another) gets that answer.
import type { BudgetCommand, Rejection, TreeState } from '@tally/budget-domain';
import { EventIds } from '@tally/budget-domain';
import type { AuthorityContext } from './authority-context.js';
import { nextChainFields, type ChainFields } from './receipt-chain.js';
import {
  answeredCommand,
  receiptIdFor,
  signedReceipt,
  type DecisionExtras,
  type ReceiptBody,
  type SignedReceipt,
} from './receipts.js';

export type ReceiptFields = Omit<
  ReceiptBody,
  'id' | 'issued_at' | 'key_id' | 'command_id' | 'chain_index' | 'prev_hash'
>;

export type Written =
  | {
      readonly kind: 'written';
      readonly receipt: SignedReceipt;
      readonly extras: DecisionExtras | undefined;
      readonly state: TreeState;
    }
  | { readonly kind: 'rejected'; readonly rejection: Rejection; readonly state: TreeState };

export async function writeReceipt(
  ctx: AuthorityContext,
  rootId: string,
  commandId: string,
  fields: ReceiptFields,
  facts: readonly BudgetCommand[],
  extras?: DecisionExtras,
  /** An Admit that a re-run could finish from its capture (ADR 0058): see RecordReceipt.resumable. */
  resumable = false,
): Promise<Written> {
  const nowMs = ctx.clock.nowMs();
  const id = receiptIdFor(rootId, commandId);
  const seal = sealer(ctx, {
    ...fields,
    id,
    command_id: commandId,
    issued_at: new Date(nowMs).toISOString(),
    key_id: ctx.signer.keyId,
  });
  // The chain position is known only on the state the step is decided on, so the body is
  // completed and signed there; `sent` is what the latest decision appended.
  let sent: SignedReceipt | undefined;
  const plan = (state: TreeState): BudgetCommand[] => {
    sent = seal(nextChainFields(state, fields.capability_id));
    return [
      ...facts,
      { ...recordOf(sent, commandId, extras, nowMs, sent.key_id), ...(resumable ? { resumable } : {}) },
    ];
  };
  const receiptEventId = EventIds.receipt(id);
  for (let attempt = 1; attempt <= ctx.limits.receiptAppendAttemptsMax; attempt++) {
    const out = await ctx.trees.step(rootId, plan);
    if (out.kind === 'committed')
      return { kind: 'written', receipt: recorded(out.state, id) ?? sent!, extras, state: out.state };
    if (out.kind === 'rejected') {
      const answered = answeredCommand(out.state, commandId);
      if (answered)
        return {
          kind: 'written',
          receipt: signedReceipt(answered),
          extras: answered.decision as DecisionExtras | undefined,
          state: out.state,
        };
      return { kind: 'rejected', rejection: out.rejection, state: out.state };
    }
    // Lost acknowledgement: the stream says whether the receipt is durable. Retrying is safe: the ids dedupe.
    if (out.present?.has(receiptEventId))
      return { kind: 'written', receipt: recorded(out.state, id) ?? sent!, extras, state: out.state };
  }
  throw new Error(`receipt ${id} could not be confirmed after ${ctx.limits.receiptAppendAttemptsMax} attempts`);
}

/** Signs the body at a chain position; a re-decision at the same position reuses the signature. */
function sealer(ctx: AuthorityContext, base: ReceiptBody): (chain: ChainFields) => SignedReceipt {
  let last: SignedReceipt | undefined;
  return (chain) => {
    if (last?.chain_index === chain.chain_index && last.prev_hash === chain.prev_hash) return last;
    const body: ReceiptBody = { ...base, ...chain };
    last = { ...body, signature: ctx.signer.sign(body, body.key_id) };
    return last;
  };
}

function recordOf(
  receipt: SignedReceipt,
  commandId: string,
  extras: DecisionExtras | undefined,
  nowMs: number,
  keyId: string,
): BudgetCommand {
  const { signature, ...body } = receipt;
  return {
    type: 'RecordReceipt',
    receipt_id: body.id,
    command_id: commandId,
    ...(body.request_id === null ? {} : { request_id: body.request_id }),
    ...(body.hold_id === null ? {} : { hold_id: body.hold_id }),
    receipt: body as unknown as Record<string, unknown>,
    signature,
    key_id: keyId,
    ...(extras === undefined ? {} : { decision: extras as unknown as Record<string, unknown> }),
    now_ms: nowMs,
  };
}

function recorded(state: TreeState, receiptId: string): SignedReceipt | undefined {
  const record = state.receipts.get(receiptId);
  return record === undefined ? undefined : signedReceipt(record);
}
