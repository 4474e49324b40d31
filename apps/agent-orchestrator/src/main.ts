// agent-orchestrator: runs work units on dispatch workers under a budget.
// Reflect.metadata must exist before the first decorated class is defined; compiled, no loader imports it.
import 'reflect-metadata';
import { bootOrExit, loadConfig, runService } from '@tally/platform-app';
import { orchestratorService } from './orchestrator.service.js';

await bootOrExit('agent-orchestrator', async () => {
  const config = loadConfig();
  await runService(await orchestratorService(config), config);
});
