// The budget-authority's read models: the ledger projection (usage, mutations, receipts
// re-signed on replay, capabilities). Loaded by the main thread and by the projection
// worker thread, which opens its own keyring from the same configuration.
import { BUDGET_ENTITIES, BUDGET_MIGRATIONS, budgetProjectionSpecs } from '@tally/budget-projections';
import type { ProjectorModule } from '@tally/platform-app';
import { authorityKeyring } from './runtime/authority-runtime.js';

export const projector: ProjectorModule = {
  database: { entities: BUDGET_ENTITIES, migrations: BUDGET_MIGRATIONS },
  specs: ({ config, names, logger }) =>
    budgetProjectionSpecs(names, authorityKeyring(config), (event, why) =>
      logger.event('error', 'budget event the ledger projection cannot place', {
        event_id: event.event.eventId,
        sequence: event.sequence,
        why,
      }),
    ),
};
