// The orchestrator's projections: work units, session log and model-visible messages,
// persisted with TypeORM (SQLite or PostgreSQL), derived with the domain's pure functions,
// and the projection set the service runs live and `tally replay` rebuilds.
export type {
  DerivedUnit,
  ProjectedEntry,
  ProjectedMessage,
  ProjectedStatus,
  WorkUnitDeriver,
} from './work-unit.deriver.js';
export * from './work-projection.entities.js';
export * from './migrations/1767225601000-create-orchestrator-projections.js';
export * from './work-units.projection.js';
export * from './work-projection.reads.js';
export * from './wire-receipt.js';
export * from './work-unit.domain-deriver.js';
export * from './projection-set.js';

import { CreateOrchestratorProjections1767225601000 } from './migrations/1767225601000-create-orchestrator-projections.js';
export const WORK_PROJECTION_MIGRATIONS = [CreateOrchestratorProjections1767225601000];
