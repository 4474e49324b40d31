// The budget-authority's projection set, built from this library's own exports, for the
// `tally` CLI: what `tally replay` and `tally replay --verify` rebuild from the budget
// events. With the authority's signer a rebuild also re-signs every receipt (B17), which is
// how the live service runs; without it receipts are recorded as signed by a foreign key.
import { budgetEventRegistry } from '@tally/budget-application';
import type { TallyNames } from '@tally/contracts';
import type { ProjectionSet } from '@tally/platform-app';
import { budgetLedgerProjection, type ReceiptSigner } from './budget-ledger.projection.js';
import { BUDGET_ENTITIES } from './entities.js';
import { CreateBudgetProjections1767225700000 } from './migrations/1767225700000-create-budget-projections.js';

export function budgetProjectionSet(signer?: ReceiptSigner): ProjectionSet {
  return {
    service: 'budget-authority',
    entities: BUDGET_ENTITIES,
    migrations: [CreateBudgetProjections1767225700000],
    specs: (names: TallyNames) => [
      { projection: budgetLedgerProjection({ stream: names.budgetEventsStream, filterSubject: names.budgetEventsWildcard, ...(signer ? { signer } : {}) }), registry: budgetEventRegistry() },
    ],
  };
}
