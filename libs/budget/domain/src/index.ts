// The budget domain: the delegation-tree aggregate as a pure decide/evolve pair.
export * from './assert.js';
export * from './model.js';
export * from './events.js';
export * from './commands.js';
export * from './decision.js';
export * from './ids.js';
export * from './state.js';
export * from './invariants.js';
export * from './evolve.js';
export * from './decide.js';
export { verifyCapability, matches, isMonetary, exposureFor, checkLimits, reverseKind } from './decide-hold.js';
export { spendFor } from './decide-settle.js';
export * from './persistent-map.js';
export * from './periods.js';
export * from './rate-window.js';
export { periodsFor, roomOf, fitExposure, checkRateLimits, alertEvents, countedTokens } from './decide-policy.js';
export { decideIncrease, increaseEventId } from './decide-increase.js';
export * from './receipt-chain.js';
