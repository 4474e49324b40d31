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

export * from './migrations/1767226000000-add-work-unit-owner.js';
import { orchestratorProjectionSet } from './projection-set.js';
export const WORK_PROJECTION_MIGRATIONS = orchestratorProjectionSet.migrations;
