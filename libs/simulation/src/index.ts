// The deterministic simulation of the budget path (ADR 0057): the real authority and
// orchestrator code over simulated ports, driven by one seeded PRNG.
export * from './store/sim-stream.js';
export * from './store/sim-event-store.js';
