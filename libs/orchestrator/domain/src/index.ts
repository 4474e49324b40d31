// The orchestrator's pure domain: the work-unit aggregate, its retry and ceiling policy,
// cost arithmetic, and the receipt and session-log projections.
export * from './work-unit.types.js';
export * from './work-unit.events.js';
export * from './work-unit.commands.js';
export * from './work-unit.state.js';
export * from './attempt.policy.js';
export * from './work-unit.decider.js';
export * from './pricing.js';
export * from './receipt.projection.js';
export * from './session-log.projection.js';
export * from './prompt-bound.js';
export * from './image-tokens.js';
