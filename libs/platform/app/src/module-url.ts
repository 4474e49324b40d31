// A module loaded by URL (a worker thread's entry, a projector the thread imports) has the
// extension of the module that names it: `.ts` when Tally runs from its sources (the loader,
// Jest), `.js` when it runs compiled from dist/ (ADR 0056). Naming `.ts` in the compiled
// image would point at a file that is not there.

/** The URL of `specifier` (a relative path without extension) from the module at `base`, with its extension. */
export function moduleUrl(specifier: string, base: string): URL {
  if (!/^\.\.?\//.test(specifier) || /\.[cm]?[jt]s$/.test(specifier))
    throw new Error(`moduleUrl: specifier must be a relative path without extension, got ${specifier}`);
  return new URL(`${specifier}${fromSources(base) ? '.ts' : '.js'}`, base);
}

/** Is the module at `base` running from the TypeScript sources rather than compiled? */
export function fromSources(base: string): boolean {
  return base.endsWith('.ts');
}
