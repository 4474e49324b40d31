// `tally up`: the local stack. Uses the NATS at NATS_URL, or starts a private
// nats-server with JetStream and a store under .tally/ when nothing answers; then runs
// both services and prints where their APIs are. Ctrl-C stops what it started, only.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fromSources, moduleUrl, parseNatsServers } from '@tally/platform-app';
import { localAdminKey } from './local-admin-key.js';

const INSTALL_NATS =
  'nats-server is not on PATH and nothing answers at NATS_URL. Install it and run again:\n' +
  '  Debian/Ubuntu:  sudo apt-get install nats-server\n' +
  '  macOS:          brew install nats-server\n' +
  'or set NATS_URL to a NATS server started with JetStream (-js).';

export interface UpOptions {
  readonly root: string;
  readonly env: NodeJS.ProcessEnv;
  readonly readyTimeoutMs: number;
}

export async function up(options: UpOptions): Promise<number> {
  const env = { ...options.env };
  env['NATS_URL'] ??= 'nats://127.0.0.1:4222';
  // The local stack is for development: its webhooks may call a receiver on this machine over http.
  env['TALLY__WEBHOOKS__ALLOW_HTTP_LOOPBACK'] ??= 'true';
  const admin = localAdminKey(options.root, env);
  env['TALLY_ADMIN_KEY'] = admin.key;
  const started: { name: string; child: ChildProcess }[] = [];
  const stopAll = () => stopChildren(started);
  process.once('SIGINT', () => void stopAll().then(() => process.exit(0)));
  process.once('SIGTERM', () => void stopAll().then(() => process.exit(0)));

  // The services' own parser reads the setting, so `tally up` takes whatever they take: a
  // server list, credentials in the URL, tls://. Only the servers, never the credentials, are shown.
  const nats = natsServersOf(env['NATS_URL']);
  if ('problem' in nats) {
    process.stderr.write(`\ntally up: NATS_URL: ${nats.problem}\n\n`);
    return 2;
  }
  const shown = nats.servers.join(', ');
  if (await anyAnswers(nats.endpoints)) {
    console.log(`tally up: using the NATS server at ${shown}`);
  } else {
    const local = privateServerPort(nats);
    if (local === undefined) {
      process.stderr.write(
        `\ntally up: no NATS server answers at ${shown}. tally up starts its own nats-server only ` +
          'for a single nats:// server on this machine; start the servers NATS_URL names, or unset it.\n\n',
      );
      return 1;
    }
    if (!onPath('nats-server')) {
      process.stderr.write(`\n${INSTALL_NATS}\n\n`);
      return 1;
    }
    const store = resolve(options.root, env['TALLY_DATA_DIR'] ?? '.tally', 'nats');
    mkdirSync(store, { recursive: true });
    const child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(local), '-js', '-sd', store], {
      stdio: 'ignore',
    });
    started.push({ name: 'nats-server', child });
    if (!(await waitFor(() => answers('127.0.0.1', local), 10_000))) {
      process.stderr.write(`\nnats-server did not start on port ${local}.\n\n`);
      await stopAll();
      return 1;
    }
    console.log(`tally up: started nats-server with JetStream on ${shown} (store ${store})`);
  }

  const services = [
    {
      name: 'budget-authority',
      main: moduleUrl('../../budget-authority/src/main', import.meta.url),
      port: Number(env['AUTHORITY_HTTP_PORT'] ?? 7401),
      metricsPort: Number(env['AUTHORITY_METRICS_PORT'] ?? 9464),
    },
    {
      name: 'agent-orchestrator',
      main: moduleUrl('../../agent-orchestrator/src/main', import.meta.url),
      port: Number(env['ORCHESTRATOR_HTTP_PORT'] ?? 7402),
      metricsPort: Number(env['ORCHESTRATOR_METRICS_PORT'] ?? 9465),
    },
  ];
  // The authority's web console reads work timelines from this stack's orchestrator (ADR 0034).
  env['TALLY__CONSOLE__ORCHESTRATOR_URL'] ??= `http://127.0.0.1:${services[1]!.port}`;
  for (const service of services) {
    // From the sources through the loader; compiled (dist/, ADR 0056), as plain JavaScript.
    const loader = fromSources(import.meta.url) ? ['--import', './tools/register.mjs'] : [];
    const child = spawn(process.execPath, [...loader, fileURLToPath(service.main)], {
      cwd: options.root,
      env,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    started.push({ name: service.name, child });
    child.once('exit', (code) => {
      if (code !== null && code !== 0) {
        process.stderr.write(`\ntally up: ${service.name} exited with code ${code}; stopping the stack.\n`);
        void stopAll().then(() => process.exit(code));
      }
    });
  }
  for (const service of services) {
    const ready = await waitFor(() => httpOk(`http://127.0.0.1:${service.port}/readyz`), options.readyTimeoutMs);
    if (!ready) {
      process.stderr.write(
        `\ntally up: ${service.name} was not ready within ${options.readyTimeoutMs} ms; stopping.\n`,
      );
      await stopAll();
      return 1;
    }
  }
  // One write, so a reader that sees the banner also sees the addresses.
  const lines = services.map(
    (s) =>
      `  ${s.name.padEnd(20)} http://127.0.0.1:${s.port}  (OpenAPI: /openapi.json, health: /readyz; ` +
      `metrics: http://127.0.0.1:${s.metricsPort}/metrics)`,
  );
  const adminLine =
    admin.file === undefined
      ? '  admin key            TALLY_ADMIN_KEY (send it as Authorization: Bearer <key>)'
      : `  admin key            in ${admin.file} (mode 0600; send it as Authorization: Bearer <key>)`;
  process.stdout.write(
    [
      '',
      'Tally is up.',
      ...lines,
      `  web console          http://127.0.0.1:${services[0]!.port}/console/  (sign in with the admin key)`,
      adminLine,
      'Press Ctrl-C to stop everything this command started.',
      '',
      '',
    ].join('\n'),
  );
  await new Promise(() => undefined);
  return 0;
}

interface NatsServers {
  /** Each server as the services connect to it, without credentials. */
  readonly servers: readonly string[];
  readonly endpoints: readonly { readonly scheme: string; readonly host: string; readonly port: number }[];
}

/** The NATS_URL setting as the services read it (parseNatsServers), with each server's host and port. */
export function natsServersOf(setting: string): NatsServers | { readonly problem: string } {
  const parsed = parseNatsServers(setting);
  if ('problem' in parsed) return parsed;
  const endpoints = parsed.servers.map((server) => {
    const url = new URL(server);
    // A bracketed IPv6 literal is a URL's spelling; a socket wants the bare address.
    return {
      scheme: url.protocol.slice(0, -1),
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: Number(url.port || 4222),
    };
  });
  return { servers: parsed.servers, endpoints };
}

/** The port to start a private server on: only for one plain server on this machine, never a cluster or TLS. */
export function privateServerPort(nats: NatsServers): number | undefined {
  if (nats.endpoints.length !== 1) return undefined;
  const only = nats.endpoints[0]!;
  const loopback = only.host === 'localhost' || only.host === '::1' || /^127\./.test(only.host);
  return only.scheme === 'nats' && loopback ? only.port : undefined;
}

async function anyAnswers(endpoints: NatsServers['endpoints']): Promise<boolean> {
  const probes = await Promise.all(endpoints.map((e) => answers(e.host, e.port)));
  return probes.includes(true);
}

function onPath(binary: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${binary}`], { stdio: 'ignore' }).status === 0;
}

function answers(host: string, port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host, port });
    socket.setTimeout(1_000, () => (socket.destroy(), done(false)));
    socket.once('connect', () => (socket.destroy(), done(true)));
    socket.once('error', () => done(false));
  });
}

async function httpOk(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
    return res.ok;
  } catch {
    return false;
  }
}

async function waitFor(probe: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

async function stopChildren(started: { name: string; child: ChildProcess }[]): Promise<void> {
  // Services first, then the nats-server they depend on.
  for (const { child } of [...started].reverse()) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    await new Promise<void>((done) => {
      const timer = setTimeout(() => (child.kill('SIGKILL'), done()), 10_000);
      child.once('exit', () => (clearTimeout(timer), done()));
      child.kill('SIGTERM');
    });
  }
  started.length = 0;
}
