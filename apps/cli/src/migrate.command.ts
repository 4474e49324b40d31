// `tally migrate`: apply pending projection-schema migrations for every service, then
// exit. Kubernetes runs it as a Job before a release rolls out.
import { loadConfig, openServiceDatabase } from '@tally/platform-app';
import { projectionSets } from './projection-sets.js';

export async function migrate(): Promise<number> {
  const config = loadConfig();
  for (const set of projectionSets()) {
    const database = await openServiceDatabase(config, set);
    const pending = await database.showMigrations();
    await database.destroy();
    process.stdout.write(
      `tally migrate: ${set.service} schema is up to date${pending ? ' (pending migrations remain!)' : ''}\n`,
    );
    if (pending) return 1;
  }
  return 0;
}
