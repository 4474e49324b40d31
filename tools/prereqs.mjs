// Checks what Tally's commands need before they run, and says exactly what to install
// when something is missing, instead of failing later with a stack trace.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';

/** The Node.js the image runs and CI tests on: the current LTS (ADR 0056). */
export const NODE_LTS = 24;
/** The oldest Node the toolchain still runs on (typeorm needs ^20.19); past end of life, so only warned about. */
const NODE_FLOOR = [20, 19];

/** The Node.js range package.json's `engines` supports. */
export function supportedNode() {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  return manifest.engines.node;
}

/** Is `version` (x.y.z) at least `min` ([major, minor])? */
export function atLeast(version, [major, minor]) {
  const [x, y] = version.split('.').map(Number);
  return x > major || (x === major && y >= minor);
}

/** `engines.node` is ">=M" (one floor, ADR 0056); anything else is a mistake in package.json. */
export function engineFloor(range) {
  const match = /^>=(\d+)(?:\.(\d+))?$/.exec(range.trim());
  if (!match) throw new Error(`package.json engines.node must be ">=MAJOR[.MINOR]", got "${range}"`);
  return [Number(match[1]), Number(match[2] ?? 0)];
}

/**
 * What to tell the user about this Node: nothing when `engines` supports it; a warning when it is
 * older but the toolchain still runs (Node 20.19+, past end of life); a refusal below that.
 */
export function nodeVerdict(version = process.versions.node, range = supportedNode()) {
  if (atLeast(version, engineFloor(range))) return { ok: true };
  const install =
    `Install Node.js ${NODE_LTS} (the current LTS, what the image runs), e.g. \`nvm install ${NODE_LTS}\` ` +
    `(the repository's .nvmrc) or your package manager's nodejs ${NODE_LTS}, then run \`npm ci\` again ` +
    '(better-sqlite3 is built for the Node that installs it).';
  if (!atLeast(version, NODE_FLOOR))
    return { ok: false, message: `Tally needs Node.js ${range}; this is Node ${version}.\n${install}` };
  return {
    ok: true,
    warning: `Tally supports Node.js ${range}; this is Node ${version}, past its end of life. It still runs, for now.\n${install}`,
  };
}

/** Stops with what to install when this Node is too old; warns when it is only unsupported. */
export function checkNode(version = process.versions.node) {
  const verdict = nodeVerdict(version);
  if (!verdict.ok) fail(verdict.message);
  if (verdict.warning) process.stderr.write(`\n${verdict.warning}\n\n`);
}

export function onPath(binary) {
  return spawnSync('sh', ['-c', `command -v ${binary}`], { stdio: 'ignore' }).status === 0;
}

/** The first server of a NATS_URL-style list (the services take `nats://a:4222,nats://b:4222`). */
export function hostPort(url, defaultPort) {
  const parsed = new URL(url.split(',')[0].trim());
  return { host: parsed.hostname || '127.0.0.1', port: Number(parsed.port || defaultPort) };
}

export function answers({ host, port }, timeoutMs = 1500) {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export const installHelp = {
  'nats-server':
    'nats-server is not on PATH. Install it, then run the command again:\n' +
    '  Debian/Ubuntu:  sudo apt-get install nats-server\n' +
    '  macOS:          brew install nats-server\n' +
    '  or point NATS_URL at a running NATS server with JetStream enabled (-js).',
  postgres:
    'PostgreSQL does not answer at DATABASE_URL. Start it (Debian/Ubuntu: sudo apt-get install postgresql && sudo pg_ctlcluster 15 main start),\n' +
    'or unset DATABASE_URL to run only the SQLite suites.',
};

export function fail(message) {
  process.stderr.write(`\n${message}\n\n`);
  process.exit(1);
}
