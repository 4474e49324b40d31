// The deterministic simulation of the budget path (ADR 0057): the real authority and
// orchestrator code over simulated ports, driven by one seeded PRNG.
export * from './core/prng.js';
export * from './core/scheduler.js';
export * from './core/trace.js';
export * from './store/sim-stream.js';
export * from './store/sim-event-store.js';
export * from './world/faults.js';
export type { SimWiring, ProofCheck, KnownKeys } from './world/wiring.js';
export * from './run/simulate.js';
export * from './check/known-findings.js';
export * from './run/shrink.js';
