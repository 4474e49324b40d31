// `npm test`: every check and every test. Lint (architecture rules), type check, then
// Jest against real NATS, real SQLite and (when DATABASE_URL is set) real PostgreSQL.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { answers, checkNode, fail, hostPort, installHelp, onPath } from './prereqs.mjs';

checkNode();
const env = { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' };
env.NATS_URL ??= 'nats://127.0.0.1:4222';

if (!onPath('nats-server')) fail(installHelp['nats-server']);
let privateNats;
if (!(await answers(hostPort(env.NATS_URL, 4222)))) {
  // Nothing answers: start a throwaway server with JetStream for this run only.
  const store = mkdtempSync(join(tmpdir(), 'tally-test-nats-'));
  const port = 14222 + Math.floor(Math.random() * 1000);
  privateNats = {
    store,
    child: spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store], { stdio: 'ignore' }),
  };
  env.NATS_URL = `nats://127.0.0.1:${port}`;
  for (let i = 0; i < 100 && !(await answers(hostPort(env.NATS_URL, port))); i++)
    await new Promise((r) => setTimeout(r, 100));
  console.log(`test: started a private nats-server at ${env.NATS_URL}`);
}
if (env.DATABASE_URL) {
  if (!(await answers(hostPort(env.DATABASE_URL, 5432)))) fail(installHelp.postgres);
  console.log('test: PostgreSQL suites enabled (DATABASE_URL is set)');
} else {
  console.log('test: DATABASE_URL is not set, so the PostgreSQL suites do not run; SQLite suites do');
}

function step(title, command, args) {
  console.log(`\n== ${title}`);
  const result = spawnSync(command, args, { stdio: 'inherit', env });
  return result.status ?? 1;
}

let status = step('project graph', 'npx', ['nx', 'show', 'projects']);
if (status === 0) status = step('lint', 'npx', ['eslint', '--max-warnings', '0', '.']);
if (status === 0) status = step('format', 'npx', ['prettier', '--check', '--log-level', 'warn', '.']);
if (status === 0) status = step('typecheck', 'npx', ['tsc', '-p', 'tsconfig.json', '--noEmit']);
if (status === 0) {
  status = step('jest', 'node', [
    '--experimental-vm-modules',
    '--no-warnings=ExperimentalWarning',
    'node_modules/jest/bin/jest.js',
    '--ci',
    ...process.argv.slice(2),
  ]);
}
if (privateNats) {
  privateNats.child.kill('SIGTERM');
  rmSync(privateNats.store, { recursive: true, force: true });
}
process.exit(status);
