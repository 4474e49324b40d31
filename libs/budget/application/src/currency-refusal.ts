// Currencies never mix (ADR 0043): a settlement or an increase in another currency than its
// hold's is refused before anything moves (no rail call, nothing booked). The refusal is a
// deny receipt like every other decision (B17), marked with the field at fault, so the HTTP
// API answers it as a 422 and a NATS command as a rejection, and a re-sent command id gets
// the same answer from the receipt its tree recorded.
import { currencyMismatch, type Hold } from '@tally/budget-domain';
import type { Section, SignedReceipt } from './receipts.js';

/** The problem type of the refusal, over HTTP and NATS alike. */
export const CURRENCY_MISMATCH = 'currency_mismatch';

export interface CurrencyRefusal {
  readonly field: string;
  readonly message: string;
}

/** The receipt's reason and its `budget_authority.currency_mismatch` section when `currency` is not the hold's. */
export function currencyRefusalFor(
  hold: Hold,
  currency: string | undefined,
  field: string,
): { readonly reason: string; readonly section: Section } | undefined {
  const reason = currencyMismatch(hold, currency);
  if (reason === undefined) return undefined;
  return { reason, section: { field, currency, hold_currency: hold.currency } };
}

/** The currency refusal a receipt records, if it records one. */
export function currencyRefusalOf(receipt: SignedReceipt): CurrencyRefusal | undefined {
  const marker = receipt.metadata.budget_authority[CURRENCY_MISMATCH];
  if (receipt.verdict !== 'deny' || typeof marker !== 'object' || marker === null) return undefined;
  const field = (marker as Section)['field'];
  if (typeof field !== 'string') return undefined;
  return { field, message: receipt.reason ?? 'the currency differs from the hold' };
}
