// The projection sets of both services, as the CLI rebuilds and verifies them. The budget
// set gets the authority's signer when this machine has it (config or key file), so a
// rebuild re-signs receipts exactly as the running authority does; it never creates a key.
import { existsSync } from 'node:fs';
import { budgetProjectionSet } from '@tally/budget-projections';
import { Ed25519Signer } from '@tally/budget-infrastructure';
import { orchestratorProjectionSet } from '@tally/orchestrator-projections';
import { loadConfig, type ProjectionSet, type TallyConfig } from '@tally/platform-app';

function authoritySignerOf(config: TallyConfig): Ed25519Signer | undefined {
  const a = config.authority;
  if (a.signing_key) return Ed25519Signer.fromSeed(a.signing_key);
  if (existsSync(a.signing_key_path)) return Ed25519Signer.loadOrCreate(a.signing_key_path);
  return undefined;
}

/** The commands load the same config; it is read here too so the sets match the running services. */
export function projectionSets(config: TallyConfig = loadConfig()): ProjectionSet[] {
  return [budgetProjectionSet(authoritySignerOf(config)), orchestratorProjectionSet];
}
