// The projection sets of both services, as the CLI rebuilds and verifies them. The budget
// set gets the authority's keys when this machine has them (config, key file, keyring), so a
// rebuild re-signs receipts exactly as the running authority does; it never creates a key.
import { existsSync } from 'node:fs';
import { budgetProjectionSet } from '@tally/budget-projections';
import { Ed25519Signer, SigningKeyring } from '@tally/budget-infrastructure';
import { orchestratorProjectionSet } from '@tally/orchestrator-projections';
import { loadConfig, type ProjectionSet, type TallyConfig } from '@tally/platform-app';

function authoritySignerOf(config: TallyConfig): SigningKeyring | undefined {
  const a = config.authority;
  if (a.signing_key) return SigningKeyring.open(Ed25519Signer.fromSeed(a.signing_key), a.keyring_dir);
  if (existsSync(a.signing_key_path))
    return SigningKeyring.open(Ed25519Signer.loadOrCreate(a.signing_key_path), a.keyring_dir);
  return undefined;
}

/** The commands load the same config; it is read here too so the sets match the running services. */
export function projectionSets(config: TallyConfig = loadConfig()): ProjectionSet[] {
  return [budgetProjectionSet(authoritySignerOf(config)), orchestratorProjectionSet];
}
