// `npm start`: the local stack (`tally up`). The Node version is checked here, the rest by the
// CLI; both say what to install instead of failing with a stack trace.
import { spawn } from 'node:child_process';
import { checkNode } from './prereqs.mjs';

checkNode();

const child = spawn(
  process.execPath,
  ['--import', './tools/register.mjs', 'apps/cli/src/main.ts', 'up', ...process.argv.slice(2)],
  { stdio: 'inherit' },
);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 130 : 1)));
