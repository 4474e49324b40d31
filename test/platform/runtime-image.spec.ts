// Proves issue 18 item 9 (ADR 0056) as lint over the files: the image is built on the current
// Node LTS pinned by digest (or by the NODE_DIGEST build ARG, which has no tag-shaped default),
// its runtime stage carries compiled JavaScript and production packages only, the Kubernetes
// manifests run the compiled entry points, `engines` and CI name the same Node, and a Node too
// old for Tally is told what to install.
import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OVERLAYS, renderOverlay } from './kustomize-render.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const DOCKERFILE = readFileSync('deploy/Dockerfile', 'utf8');
const DIGEST = /^sha256:[0-9a-f]{64}$/;
const LTS = 24;

interface Stage {
  readonly from: string;
  readonly name: string | undefined;
  readonly lines: string[];
}

/** The global ARGs (before the first FROM) with their defaults, and the stages in order. */
function parseDockerfile(text: string): { args: Map<string, string>; stages: Stage[] } {
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const line of text.split('\n').map((l) => l.trim())) {
    if (line === '' || line.startsWith('#')) continue;
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$/i.exec(line);
    const arg = /^ARG\s+([A-Z_]+)(?:=(.*))?$/.exec(line);
    if (from) stages.push({ from: from[1]!, name: from[2], lines: [] });
    else if (arg && stages.length === 0) args.set(arg[1]!, arg[2] ?? '');
    else stages.at(-1)?.lines.push(line);
  }
  return { args, stages };
}

/** dist/apps/x/src/main.js -> apps/x/src/main.ts: the source `npm run build` compiles it from. */
function sourceOf(entry: string): string {
  return entry.replace(/^dist\//, '').replace(/\.js$/, '.ts');
}

function containers(): { file: string; container: Json }[] {
  const out: { file: string; container: Json }[] = [];
  for (const overlay of OVERLAYS) {
    for (const object of renderOverlay(overlay)) {
      const spec =
        object['spec']?.['jobTemplate']?.['spec']?.['template']?.['spec'] ?? object['spec']?.['template']?.['spec'];
      for (const container of [...(spec?.['initContainers'] ?? []), ...(spec?.['containers'] ?? [])] as Json[])
        if (/^tally[:@]/.test(String(container['image']))) out.push({ file: overlay, container });
    }
  }
  return out;
}

describe('issue 18 item 9 the image and the runtime', () => {
  const { args, stages } = parseDockerfile(DOCKERFILE);
  const runtime = stages.at(-1)!;

  it('ADR 0056 every FROM is node 24 bookworm-slim pinned by @sha256, or by the NODE_DIGEST build ARG', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const names = new Set(stages.map((s) => s.name).filter(Boolean));
    for (const { from } of stages) {
      if (names.has(from)) continue; // an earlier stage, pinned where it starts
      const reference = from.replace(/\$\{([A-Z_]+)\}/g, (_, name: string) => args.get(name) ?? `<${name} undeclared>`);
      const literal = /@sha256:[0-9a-f]{64}$/.test(from);
      const byArg = /@\$\{([A-Z_]+)\}$/.exec(from)?.[1];
      expect({ from, pinned: literal || (byArg !== undefined && args.has(byArg)) }).toEqual({ from, pinned: true });
      expect(reference).toMatch(new RegExp(`^node:${LTS}(\\.\\d+)*-bookworm-slim@`));
    }
    // Unpinned until tools/pin-node-image.sh writes a digest: never a tag, a placeholder or `latest`.
    const digest = args.get('NODE_DIGEST') ?? '';
    expect(digest === '' || DIGEST.test(digest)).toBe(true);
  });

  it('ADR 0056 the runtime stage runs compiled JavaScript with plain node: no swc, TypeScript, loader or sources', () => {
    const text = runtime.lines.join('\n');
    expect(text).not.toMatch(/@swc|typescript|\btsc\b|register\.mjs|ts-loader|--import|\.ts\b/);
    const copies = runtime.lines.filter((l) => l.startsWith('COPY'));
    expect(copies).toEqual([
      'COPY package.json ./',
      'COPY --from=deps /app/node_modules ./node_modules',
      'COPY --from=build /app/dist ./dist',
    ]);
    const deps = stages.find((s) => s.name === 'deps')!;
    expect(deps.lines).toContain('RUN npm ci --omit=dev --omit=optional --no-audit --no-fund');
    expect(stages.find((s) => s.name === 'build')!.lines).toContain('RUN npm run build');
    const entrypoint = JSON.parse(runtime.lines.find((l) => l.startsWith('ENTRYPOINT'))!.slice(11)) as string[];
    const cmd = JSON.parse(runtime.lines.find((l) => l.startsWith('CMD'))!.slice(4)) as string[];
    expect(entrypoint).toEqual(['node', '--enable-source-maps']);
    expect(cmd).toEqual(['dist/apps/budget-authority/src/main.js']);
    expect(existsSync(sourceOf(cmd[0]!))).toBe(true);
  });

  it('ADR 0056 --omit=dev --omit=optional leaves out swc and TypeScript: neither is a production package in the lock', () => {
    const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> };
    const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, Json> };
    const production = Object.entries(lock.packages)
      // What npm installs under --omit=dev --omit=optional: typescript is devOptional (an optional peer).
      .filter(([path, entry]) => path !== '' && !entry['dev'] && !entry['optional'] && !entry['devOptional'])
      .map(([path]) => path.replace(/^.*node_modules\//, ''));
    const compilers = (name: string) => name.startsWith('@swc/') || name === 'typescript';
    expect(Object.keys(manifest.dependencies).filter(compilers)).toEqual([]);
    expect(production.filter(compilers)).toEqual([]);
  });

  it('ADR 0056 every Kubernetes container runs a compiled entry point from dist/, which the build makes', () => {
    const found = containers();
    expect(found.length).toBeGreaterThanOrEqual(4);
    for (const { file, container } of found) {
      const argv = [
        ...((container['command'] as string[] | undefined) ?? []),
        ...((container['args'] as string[]) ?? []),
      ];
      const entry = argv[0] ?? '';
      expect({ file, entry, compiled: /^dist\/apps\/[a-z-]+\/src\/main\.js$/.test(entry) }).toEqual({
        file,
        entry,
        compiled: true,
      });
      expect(argv.join(' ')).not.toMatch(/\.ts\b|register\.mjs|--import/);
      expect(existsSync(sourceOf(entry))).toBe(true);
    }
  });

  it(`ADR 0056 engines, .nvmrc and CI name the same Node: the current LTS (${LTS})`, () => {
    const engines = (JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } }).engines.node;
    expect(engines).toBe('>=22');
    expect(readFileSync('.nvmrc', 'utf8').trim()).toBe(String(LTS));
    expect(readFileSync('.ci/run', 'utf8')).toMatch(new RegExp(`^NODE_VERSION=${LTS}\\.\\d+\\.\\d+$`, 'm'));
  });

  it('ADR 0056 npm start tells a Node too old for Tally what to install, and only warns on an unsupported 20.19+', async () => {
    const prereqs = (await import('../../tools/prereqs.mjs' as string)) as {
      nodeVerdict(version: string, range: string): { ok: boolean; message?: string; warning?: string };
    };
    expect(prereqs.nodeVerdict('24.22.3', '>=22')).toEqual({ ok: true });
    expect(prereqs.nodeVerdict('22.0.0', '>=22')).toEqual({ ok: true });
    const old = prereqs.nodeVerdict('18.20.4', '>=22');
    expect(old.ok).toBe(false);
    expect(old.message).toMatch(/Tally needs Node\.js >=22; this is Node 18\.20\.4\.\nInstall Node\.js 24 /);
    const eol = prereqs.nodeVerdict('20.20.2', '>=22');
    expect(eol).toEqual({ ok: true, warning: expect.stringMatching(/past its end of life.*\nInstall Node\.js 24 /s) });
    const refused = spawnSync(
      process.execPath,
      ['-e', "import('./tools/prereqs.mjs').then((p) => p.checkNode('18.0.0'))"],
      { encoding: 'utf8' },
    );
    expect({ status: refused.status, stderr: refused.stderr }).toEqual({
      status: 1,
      stderr: expect.stringContaining('Install Node.js 24'),
    });
  });

  it('ADR 0056 tools/pin-node-image.sh writes the digest docker resolves, and refuses an answer that is not one', () => {
    // No registry is reachable from the test machine: a stand-in `docker` answers as
    // `docker buildx imagetools inspect --format {{.Manifest.Digest}}` does.
    const dir = mkdtempSync(join(tmpdir(), 'tally-pin-'));
    const docker = join(dir, 'docker');
    const dockerfile = join(dir, 'Dockerfile');
    const digest = `sha256:${'ab12'.repeat(16)}`;
    const run = (answer: string) => {
      writeFileSync(docker, `#!/bin/sh\necho "$*" > ${join(dir, 'asked')}\necho '${answer}'\n`);
      chmodSync(docker, 0o755);
      writeFileSync(dockerfile, DOCKERFILE);
      return spawnSync('bash', ['tools/pin-node-image.sh'], {
        encoding: 'utf8',
        env: { ...process.env, PATH: `${dir}:${process.env['PATH']}`, DOCKERFILE: dockerfile },
      });
    };
    const pinned = run(digest);
    expect(pinned.status).toBe(0);
    expect(readFileSync(join(dir, 'asked'), 'utf8').trim()).toBe(
      'buildx imagetools inspect node:24-bookworm-slim --format {{.Manifest.Digest}}',
    );
    expect(parseDockerfile(readFileSync(dockerfile, 'utf8')).args.get('NODE_DIGEST')).toBe(digest);
    const refused = run('error: not found');
    expect(refused.status).toBe(1);
    expect(readFileSync(dockerfile, 'utf8')).toBe(DOCKERFILE);
  });
});
