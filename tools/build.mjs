// `npm run build`: compiles the services, the CLI and the libraries they use to JavaScript in
// dist/, the same layout as the sources (dist/apps/budget-authority/src/main.js, ...), so the
// image runs plain `node` with no TypeScript compiler or loader (ADR 0056). The workspace
// aliases (@tally/*) are rewritten to relative paths here, at build time, from
// tsconfig.base.json; a specifier that names no alias fails the build instead of failing a pod.
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformSync } from '@swc/core';
import { swcOptions } from './swc-options.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = resolve(root, process.argv[2] ?? 'dist');

/** Test-only libraries: no service or CLI imports them, and they import devDependencies. */
const TEST_ONLY = new Set(['libs/testing', 'libs/simulation']);
/** Files read at run time next to the code (the console's static assets). */
const ASSETS = ['apps/budget-authority/console'];
/** The source tree is a few hundred files; a walk past this many means a loop or a wrong root. */
const MAX_FILES = 20_000;

const paths = JSON.parse(readFileSync(join(root, 'tsconfig.base.json'), 'utf8')).compilerOptions.paths;
/** Alias -> its entry module in dist, e.g. @tally/contracts -> <out>/libs/contracts/src/index.js. */
const aliases = new Map(Object.entries(paths).map(([name, [target]]) => [name, join(out, toJs(target))]));

function toJs(path) {
  return path.replace(/^\.\//, '').replace(/\.ts$/, '.js');
}

/** Every .ts file under dir that is source (not a spec, not a declaration). */
function sources(dir, found = []) {
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) sources(path, found);
    else if (path.endsWith('.ts') && !path.endsWith('.spec.ts') && !path.endsWith('.d.ts')) found.push(path);
    if (found.length > MAX_FILES) throw new Error(`build: more than ${MAX_FILES} files under ${dir}`);
  }
  return found;
}

/** The src/ folders of every app and library, but the test-only ones. */
function sourceRoots() {
  const roots = readdirSync(join(root, 'apps')).map((app) => `apps/${app}`);
  for (const target of Object.values(paths).map(([t]) => t.replace(/^\.\//, ''))) {
    const lib = target.replace(/\/src\/index\.ts$/, '');
    if (!TEST_ONLY.has(lib)) roots.push(lib);
  }
  return [...new Set(roots)].map((dir) => `${dir}/src`);
}

/** Rewrites `from "@tally/x"`, `import "@tally/x"` and `import("@tally/x")` to relative paths. */
function resolveAliases(code, file) {
  const from = dirname(join(out, file));
  return code.replace(/(\bfrom\s*|\bimport\s*\(?\s*)(["'])(@tally\/[^"']+)\2/g, (_, lead, quote, name) => {
    const target = aliases.get(name);
    if (!target) throw new Error(`build: ${file} imports ${name}, which tsconfig.base.json does not map`);
    const path = relative(from, target);
    return `${lead}${quote}${path.startsWith('.') ? path : `./${path}`}${quote}`;
  });
}

function compile(file) {
  const target = join(out, toJs(file));
  const { code, map } = transformSync(readFileSync(join(root, file), 'utf8'), {
    ...swcOptions,
    filename: join(root, file),
    sourceFileName: relative(dirname(target), join(root, file)),
    sourceMaps: true,
  });
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, `${resolveAliases(code, file)}\n//# sourceMappingURL=${target.split('/').pop()}.map\n`);
  if (map) writeFileSync(`${target}.map`, map);
}

rmSync(out, { recursive: true, force: true });
const files = sourceRoots().flatMap((dir) => sources(dir));
for (const file of files) compile(file);
for (const dir of ASSETS) cpSync(join(root, dir), join(out, dir), { recursive: true });
// Without this, Node would read dist/*.js by the nearest package.json: dist is ES modules on its own.
writeFileSync(join(out, 'package.json'), `${JSON.stringify({ type: 'module' }, null, 2)}\n`);
console.log(`build: compiled ${files.length} files to ${relative(root, out) || '.'}`);
