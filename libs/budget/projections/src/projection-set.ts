// The budget-authority's projection set: what the service runs live and what `tally
// replay` / `tally replay --verify` rebuild from the budget events. With the authority's
// signer a rebuild also re-signs every receipt (B17), as the live service does; without it
// receipts are recorded as signed by a foreign key.
import { budgetEventRegistry } from '@tally/budget-application';
import type { TallyNames } from '@tally/contracts';
import type { StoredEvent } from '@tally/eventing';
import type { ProjectionSet, ProjectionSpec } from '@tally/platform-app';
import { budgetLedgerProjection, type ReceiptSigner } from './budget-ledger.projection.js';
import { BUDGET_ENTITIES } from './entities.js';
import { CreateBudgetProjections1767225700000 } from './migrations/1767225700000-create-budget-projections.js';
import { AddMutationCommitPosition1767225800000 } from './migrations/1767225800000-add-mutation-commit-position.js';
import { AddReceiptChains1767226200000 } from './migrations/1767226200000-add-receipt-chains.js';
import { AddCapabilityTenant1767226480000 } from './migrations/1767226480000-add-capability-tenant.js';
import { AddUsageOverrun1767227043000 } from './migrations/1767227043000-add-usage-overrun.js';

export const BUDGET_MIGRATIONS = [
  CreateBudgetProjections1767225700000,
  AddMutationCommitPosition1767225800000,
  AddReceiptChains1767226200000,
  AddCapabilityTenant1767226480000,
  AddUsageOverrun1767227043000,
];

export function budgetProjectionSpecs(
  names: TallyNames,
  signer?: ReceiptSigner,
  onOrphan?: (event: StoredEvent, why: string) => void,
): ProjectionSpec[] {
  const projection = budgetLedgerProjection({
    stream: names.budgetEventsStream,
    filterSubject: names.budgetEventsWildcard,
    ...(signer ? { signer } : {}),
    ...(onOrphan ? { onOrphan } : {}),
  });
  return [{ projection, registry: budgetEventRegistry() }];
}

export function budgetProjectionSet(signer?: ReceiptSigner): ProjectionSet {
  return {
    service: 'budget-authority',
    entities: BUDGET_ENTITIES,
    migrations: BUDGET_MIGRATIONS,
    specs: (names) => budgetProjectionSpecs(names, signer),
  };
}
