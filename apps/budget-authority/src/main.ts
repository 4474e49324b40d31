// budget-authority: issues signed capabilities and admits paid invocations.
// Reflect.metadata must exist before the first decorated class is defined; compiled, no loader imports it.
import 'reflect-metadata';
import { bootOrExit, loadConfig, runService } from '@tally/platform-app';
import { authorityService } from './authority.service.js';

await bootOrExit('budget-authority', async () => {
  const config = loadConfig();
  await runService(await authorityService(config), config);
});
