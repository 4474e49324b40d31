// budget-authority: issues signed capabilities and admits paid invocations.
import { bootOrExit, loadConfig, runService } from '@tally/platform-app';
import { authorityService } from './authority.service.js';

await bootOrExit('budget-authority', async () => {
  const config = loadConfig();
  await runService(await authorityService(config), config);
});
