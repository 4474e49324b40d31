// `npm start`: the local stack (`tally up`). Prerequisites are checked by the CLI, which
// says what to install instead of failing with a stack trace.
import { spawn } from 'node:child_process';

const child = spawn(
  process.execPath,
  ['--import', './tools/register.mjs', 'apps/cli/src/main.ts', 'up', ...process.argv.slice(2)],
  { stdio: 'inherit' },
);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 130 : 1)));
