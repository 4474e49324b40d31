// agent-orchestrator: runs work units on dispatch workers under a budget.
import { bootOrExit, loadConfig, runService } from '@tally/platform-app';
import { orchestratorService } from './orchestrator.service.js';

await bootOrExit('agent-orchestrator', async () => {
  const config = loadConfig();
  await runService(await orchestratorService(config), config);
});
