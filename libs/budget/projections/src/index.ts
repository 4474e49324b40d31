// Budget projections: the ledger tables folded from TALLY_BUDGET_EVENTS, their
// migration and the reads the budget-authority's HTTP API serves.
export * from './entities.js';
export * from './migrations/1767225700000-create-budget-projections.js';
export * from './budget-ledger.projection.js';
export * from './budget-queries.js';
export type * from './wire.js';
export { ambiguityToWire, holdToWire, money } from './wire.js';
export * from './projection-set.js';
export * from './migrations/1767225800000-add-mutation-commit-position.js';
export * from './migrations/1767226200000-add-receipt-chains.js';
export * from './receipt-chains.js';
export * from './receipt-pages.js';
export * from './migrations/1767226480000-add-capability-tenant.js';
export * from './migrations/1767227043000-add-usage-overrun.js';
export * from './overview-queries.js';
