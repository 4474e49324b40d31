// The agent-orchestrator's read models: work units, receipts, the session log and the
// messages. Loaded by the main thread and by the projection worker thread.
import { orchestratorProjectionSet } from '@tally/orchestrator-projections';
import type { ProjectorModule } from '@tally/platform-app';

export const projector: ProjectorModule = {
  database: { entities: orchestratorProjectionSet.entities, migrations: orchestratorProjectionSet.migrations },
  specs: ({ names }) => orchestratorProjectionSet.specs(names),
};
