// Proves issue 18 item 9 (ADR 0056): `npm run build` compiles the services and the CLI to plain
// JavaScript with the @tally/* aliases resolved, and the compiled budget-authority and
// agent-orchestrator boot from dist/ under plain `node` (no loader, no TypeScript compiler)
// against real NATS and SQLite, answering /healthz and /readyz. The build goes to a directory of
// its own, with the sources out of reach, so nothing in it can fall back on a .ts file.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  deleteNamespaceStreams,
  ServiceProcess,
  sharedNatsUrl,
  uniqueNamespace,
  type ServiceName,
} from '@tally/testing';

const dir = mkdtempSync(join(tmpdir(), 'tally-compiled-'));
const dist = join(dir, 'dist');
const running: ServiceProcess[] = [];
const namespaces: string[] = [];

/** Every file under dist, relative to it (a few hundred; bounded by the build's own limit). */
function filesOf(root: string, prefix = ''): string[] {
  return readdirSync(join(root, prefix), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesOf(root, join(prefix, entry.name)) : [join(prefix, entry.name)],
  );
}

function node(args: readonly string[]): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, args, {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

beforeAll(() => {
  const build = spawnSync(process.execPath, ['tools/build.mjs', dist], { encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stdout}${build.stderr}`);
  // The packages the image installs; the sources stay behind in the repository.
  symlinkSync(realpathSync('node_modules'), join(dir, 'node_modules'));
}, 120_000);

afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
  for (const ns of namespaces) await deleteNamespaceStreams(sharedNatsUrl(), ns);
  rmSync(dir, { recursive: true, force: true });
});

describe('issue 18 item 9 the compiled build', () => {
  it('ADR 0056 dist holds JavaScript only, every @tally/* alias resolved, nothing importing swc or TypeScript', () => {
    const files = filesOf(dist);
    expect(files.filter((f) => f.endsWith('.ts'))).toEqual([]);
    const code = files.filter((f) => f.endsWith('.js')).map((f) => [f, readFileSync(join(dist, f), 'utf8')] as const);
    expect(code.length).toBeGreaterThan(100);
    const specifiers = /(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g;
    const offending = code.flatMap(([file, text]) =>
      [...text.matchAll(specifiers)]
        .map((m) => m[1]!)
        .filter((s) => s.startsWith('@tally/') || s.startsWith('@swc/') || s === 'typescript' || s.endsWith('.ts'))
        .map((s) => `${file}: ${s}`),
    );
    expect(offending).toEqual([]);
    expect(files).toEqual(expect.arrayContaining(['apps/budget-authority/console/index.html', 'package.json']));
  });

  it('ADR 0056 the compiled CLI runs under plain node', () => {
    const help = node(['dist/apps/cli/src/main.js', '--help']);
    expect(help).toEqual({ status: 0, output: expect.stringContaining('migrate') });
  });

  it.each<ServiceName>(['budget-authority', 'agent-orchestrator'])(
    'ADR 0056 the compiled %s boots from dist under plain node and answers /healthz and /readyz',
    async (service) => {
      const namespace = uniqueNamespace('compiled');
      namespaces.push(namespace);
      const started = await ServiceProcess.start({
        service,
        cwd: dir,
        command: ['--enable-source-maps', `dist/apps/${service}/src/main.js`],
        readyTimeoutMs: 120_000,
        env: {
          NODE_OPTIONS: '',
          NATS_URL: sharedNatsUrl(),
          TALLY_NAMESPACE: namespace,
          TALLY_SQLITE_PATH: join(dir, `${namespace}.sqlite`),
          TALLY__STREAMS__QUEUE_MAX_BYTES: String(64 * 1024 * 1024),
          TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(64 * 1024 * 1024),
          DATABASE_URL: '',
        },
      });
      running.push(started);
      const health = await fetch(`${started.url}/healthz`);
      expect({ status: health.status, body: await health.json() }).toEqual({ status: 200, body: { status: 'ok' } });
      const ready = await fetch(`${started.url}/readyz`);
      expect({ status: ready.status, body: await ready.json() }).toEqual({ status: 200, body: { status: 'ready' } });
      // The full report (ADR 0053): the projection thread, compiled too, has started.
      const report = await fetch(`${started.metricsUrl}/readyz`);
      expect(report.status).toBe(200);
    },
    180_000,
  );
});
