// The budget application layer: ports, the BudgetAuthority facade and its use cases.
export * from './ports.js';
export * from './budget-authority.js';
export * from './budget-event-registry.js';
export * from './budget-event.dtos.js';
export * from './event-codec.js';
export * from './tree-store.js';
export * from './keyed-queue.js';
export * from './receipts.js';
export * from './tokens.js';
export type { AdmitCommand } from './admit/admit-flow.js';
export type { BudgetAuthorityLimits, AuthorityContext } from './authority-context.js';
export { Reasons, UNVERIFIED_TREE, rootOfCapability } from './authority-context.js';
export * from './capability.handlers.js';
export * from './settle.handler.js';
export * from './expire.handler.js';
export * from './reconcile.handler.js';
export * from './increase.handler.js';
export * from './usage-periods.js';
