// The orchestrator's projections: work units, session log and model-visible messages,
// persisted with TypeORM (SQLite or PostgreSQL) and derived through an injected deriver.
export type { DerivedUnit, ProjectedEntry, ProjectedMessage, ProjectedStatus, WorkUnitDeriver } from './work-unit.deriver.js';
export * from './work-projection.entities.js';
export * from './migrations/1767225601000-create-orchestrator-projections.js';
export * from './work-units.projection.js';
export * from './work-projection.reads.js';

import { CreateOrchestratorProjections1767225601000 } from './migrations/1767225601000-create-orchestrator-projections.js';
export const WORK_PROJECTION_MIGRATIONS = [CreateOrchestratorProjections1767225601000];
