// The projection sets of both services, as the CLI rebuilds and verifies them. The budget
// set gets the authority's keys when this machine has them (config, key file, keyring), so a
// rebuild re-signs receipts exactly as the running authority does; it never creates a key.
import { budgetProjectionSet } from '@tally/budget-projections';
import { orchestratorProjectionSet } from '@tally/orchestrator-projections';
import { loadConfig, type ProjectionSet, type TallyConfig } from '@tally/platform-app';
import { authorityKeyringOf } from './authority-keys.js';

/** The commands load the same config; it is read here too so the sets match the running services. */
export function projectionSets(config: TallyConfig = loadConfig()): ProjectionSet[] {
  return [budgetProjectionSet(authorityKeyringOf(config)), orchestratorProjectionSet];
}
