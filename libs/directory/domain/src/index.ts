export * from './model.js';
export * from './events.js';
export * from './tenant.decider.js';
export * from './signing-keys.decider.js';
