// Appends a decision's receipt together with the last facts of its path, in one step.
// A command that was already answered (by this replica or another) gets that answer.
import type { BudgetCommand, Rejection, TreeState } from '@tally/budget-domain';
import { EventIds } from '@tally/budget-domain';
import type { AuthorityContext } from './authority-context.js';
import {
  answeredCommand,
  receiptIdFor,
  signedReceipt,
  type DecisionExtras,
  type ReceiptBody,
  type SignedReceipt,
} from './receipts.js';

export type ReceiptFields = Omit<ReceiptBody, 'id' | 'issued_at' | 'key_id' | 'command_id'>;

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
): Promise<Written> {
  const nowMs = ctx.clock.nowMs();
  const body: ReceiptBody = {
    ...fields,
    id: receiptIdFor(rootId, commandId),
    command_id: commandId,
    issued_at: new Date(nowMs).toISOString(),
    key_id: ctx.signer.keyId,
  };
  const signature = ctx.signer.sign(body);
  const record: BudgetCommand = {
    type: 'RecordReceipt',
    receipt_id: body.id,
    command_id: commandId,
    ...(body.request_id === null ? {} : { request_id: body.request_id }),
    ...(body.hold_id === null ? {} : { hold_id: body.hold_id }),
    receipt: body as unknown as Record<string, unknown>,
    signature,
    key_id: ctx.signer.keyId,
    ...(extras === undefined ? {} : { decision: extras as unknown as Record<string, unknown> }),
    now_ms: nowMs,
  };
  const receiptEventId = EventIds.receipt(body.id);
  for (let attempt = 1; attempt <= ctx.limits.receiptAppendAttemptsMax; attempt++) {
    const out = await ctx.trees.step(rootId, () => [...facts, record]);
    if (out.kind === 'committed') return { kind: 'written', receipt: { ...body, signature }, extras, state: out.state };
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
      return { kind: 'written', receipt: { ...body, signature }, extras, state: out.state };
  }
  throw new Error(`receipt ${body.id} could not be confirmed after ${ctx.limits.receiptAppendAttemptsMax} attempts`);
}
