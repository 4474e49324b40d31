// Node ESM loader hooks that run Tally's TypeScript sources directly, in development, tests and
// benchmarks: no build step between an edit and a run. The image runs the compiled build instead
// (tools/build.mjs, ADR 0056), with the same swc options and the same aliases, read here from
// tsconfig.base.json, the one source of truth.
import { readFileSync, existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, resolve as resolvePath } from 'node:path';
import { transformSync } from '@swc/core';
import { swcOptions } from './swc-options.mjs';

const root = resolvePath(dirname(fileURLToPath(import.meta.url)), '..');
const paths = JSON.parse(readFileSync(resolvePath(root, 'tsconfig.base.json'), 'utf8')).compilerOptions.paths;
const aliases = new Map(
  Object.entries(paths).map(([name, [target]]) => [name, pathToFileURL(resolvePath(root, target)).href]),
);

export async function resolve(specifier, context, nextResolve) {
  const alias = aliases.get(specifier);
  if (alias) return { url: alias, shortCircuit: true };
  const parent = context.parentURL;
  if (parent && parent.endsWith('.ts') && specifier.startsWith('.') && specifier.endsWith('.js')) {
    const candidate = new URL(specifier.slice(0, -3) + '.ts', parent);
    if (existsSync(fileURLToPath(candidate))) return { url: candidate.href, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return nextLoad(url, context);
  const filename = fileURLToPath(url);
  const { code } = transformSync(readFileSync(filename, 'utf8'), { ...swcOptions, filename, sourceMaps: 'inline' });
  return { format: 'module', source: code, shortCircuit: true };
}
