// Checks what Tally's commands need before they run, and says exactly what to install
// when something is missing, instead of failing later with a stack trace.
import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';

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
