// The agent-orchestrator's projection set: what the service runs live and what `tally
// replay` and `tally replay --verify` rebuild from the work-events stream, with the same
// domain-backed deriver, so a rebuild derives exactly the live rows.
import type { TallyNames } from '@tally/contracts';
import { workEventRegistry } from '@tally/orchestrator-application';
import type { ProjectionSet } from '@tally/platform-app';
import { CreateOrchestratorProjections1767225601000 } from './migrations/1767225601000-create-orchestrator-projections.js';
import { AddWorkUnitOwner1767226000000 } from './migrations/1767226000000-add-work-unit-owner.js';
import { WORK_PROJECTION_ENTITIES } from './work-projection.entities.js';
import type { WorkUnitDeriver } from './work-unit.deriver.js';
import { workUnitDeriver } from './work-unit.domain-deriver.js';
import { workUnitsProjection } from './work-units.projection.js';

export const orchestratorProjectionSet: ProjectionSet = {
  service: 'agent-orchestrator',
  entities: WORK_PROJECTION_ENTITIES,
  migrations: [CreateOrchestratorProjections1767225601000, AddWorkUnitOwner1767226000000],
  specs: (names: TallyNames) => [
    {
      projection: workUnitsProjection({
        stream: names.workEventsStream,
        filterSubject: names.workEventsWildcard,
        deriver: workUnitDeriver as WorkUnitDeriver<unknown>,
      }),
      registry: workEventRegistry(),
    },
  ],
};
