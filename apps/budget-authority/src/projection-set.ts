// The budget-authority's projection set: what the service runs live and what
// `tally replay` / `tally replay --verify` rebuild from TALLY_BUDGET_EVENTS.
import { budgetEventRegistry } from '@tally/budget-application';
import { BUDGET_ENTITIES, budgetLedgerProjection, CreateBudgetProjections1767225700000, type ReceiptSigner } from '@tally/budget-projections';
import type { ProjectionSet, ProjectionSpec } from '@tally/platform-app';
import type { TallyNames } from '@tally/contracts';
import type { StoredEvent } from '@tally/eventing';

export const BUDGET_MIGRATIONS = [CreateBudgetProjections1767225700000];

export function budgetProjectionSpecs(names: TallyNames, signer?: ReceiptSigner, onOrphan?: (event: StoredEvent, why: string) => void): ProjectionSpec[] {
  const projection = budgetLedgerProjection({ stream: names.budgetEventsStream, filterSubject: names.budgetEventsWildcard, ...(signer ? { signer } : {}), ...(onOrphan ? { onOrphan } : {}) });
  return [{ projection, registry: budgetEventRegistry() }];
}

/** With the authority's signer, a rebuild also re-signs every receipt body and records whether it matched (B17). */
export function budgetProjectionSet(signer?: ReceiptSigner): ProjectionSet {
  return { service: 'budget-authority', entities: BUDGET_ENTITIES, migrations: BUDGET_MIGRATIONS, specs: (names) => budgetProjectionSpecs(names, signer) };
}
