// The orchestrator's use cases: the dispatch worker and the work-unit commands and reads,
// with the ports they need and the wire registry of work-unit events.
export * from './ports.js';
export * from './credential.js';
export * from './work-events.registry.js';
export * from './work-unit.repository.js';
export * from './attempt-outcome.mapping.js';
export * from './dispatch-worker.js';
export * from './work-units.js';
export * from './fitted-admission.js';
export * from './call-parameters.js';
export * from './output-by-reference.js';
