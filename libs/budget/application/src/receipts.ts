// Receipts: one per decision on every path (B17), signed over canonical JSON and
// recorded in the tree's stream, so a replay re-signs the same body to the same signature.
// Bodies are plain JSON (money already in wire form) so the stored bytes are what was signed.
import type { AdmitContext, ReceiptRecord, TreeState } from '@tally/budget-domain';
import type { AdmissionProof } from './tokens.js';

export type Section = Record<string, unknown>;

/** Metadata sections; key names follow the seed (budget_authority, financial, ...). */
export interface ReceiptMetadata {
  budget_authority: Section & { invocation_capture?: Section; cancel_captured_before_dispatch?: Section };
  financial: Section;
  execution_nonce?: Section;
  runtime?: Section;
}

export interface ReceiptBody {
  readonly id: string;
  readonly kind: 'admission' | 'settlement' | 'increase';
  readonly verdict: 'allow' | 'deny';
  readonly reason: string | null;
  readonly command_id: string;
  readonly request_id: string | null;
  readonly capability_id: string | null;
  readonly hold_id: string | null;
  readonly grant_index: number | null;
  readonly server_id: string | null;
  readonly tool_name: string | null;
  readonly context: AdmitContext | null;
  readonly settlement?: string;
  readonly issued_at: string;
  readonly key_id: string;
  readonly metadata: ReceiptMetadata;
  /** Place in its chain and the hash it links to (ADR 0030); absent on receipts from before the chain. */
  readonly chain_index?: number;
  readonly prev_hash?: string;
}

export type SignedReceipt = ReceiptBody & { readonly signature: string };

export interface AdmitDecision {
  readonly verdict: 'allow' | 'deny';
  readonly reason?: string;
  readonly hold_id?: string;
  readonly grant_index?: number;
  /** False for an Allow that only hands out an execution nonce (B13): nothing may be dispatched yet. */
  readonly dispatch: boolean;
  readonly execution_nonce?: string;
  readonly admission_proof?: AdmissionProof;
  readonly retry_after_ms?: number;
  readonly hold_units?: number | string;
  readonly receipt: SignedReceipt;
}

export interface DecisionExtras {
  readonly dispatch: boolean;
  readonly execution_nonce?: string;
  readonly admission_proof?: AdmissionProof;
  /** A rate-limit refusal: when a retry can pass, as the window stood (http-api.md, Spend policy). */
  readonly retry_after_ms?: number;
  /** What the hold covers (wire money): less than requested when it was fitted down (min_cost). */
  readonly hold_units?: number | string;
}

export const receiptIdFor = (rootId: string, commandId: string): string => `receipt:${rootId}:${commandId}`;

/** The root id inside a receipt id: the tree whose stream holds it. */
export function rootOfReceiptId(receiptId: string): string | undefined {
  const match = /^receipt:([A-Za-z0-9_-]{1,64}):/.exec(receiptId);
  return match?.[1];
}

export function signedReceipt(record: ReceiptRecord): SignedReceipt {
  return { ...(record.body as unknown as ReceiptBody), signature: record.signature };
}

export function decisionFrom(record: ReceiptRecord): AdmitDecision {
  const receipt = signedReceipt(record);
  const extras = (record.decision ?? { dispatch: false }) as unknown as DecisionExtras;
  return {
    verdict: receipt.verdict,
    ...(receipt.reason === null ? {} : { reason: receipt.reason }),
    ...(receipt.hold_id === null ? {} : { hold_id: receipt.hold_id }),
    ...(receipt.grant_index === null ? {} : { grant_index: receipt.grant_index }),
    ...extras,
    receipt,
  };
}

export function answeredCommand(state: TreeState, commandId: string): ReceiptRecord | undefined {
  const id = state.command_receipts.get(commandId);
  return id === undefined ? undefined : state.receipts.get(id);
}
