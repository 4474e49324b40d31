// Proves ADR 0056: a module named by URL at run time takes the extension of the module naming it,
// so the sources name .ts files and the compiled build names .js files that exist beside it.
import { describe, expect, it } from '@jest/globals';
import { fromSources, moduleUrl } from '../src/module-url.js';

describe('ADR 0056 moduleUrl', () => {
  it('ADR 0056 names .ts from the sources and .js from the compiled build', () => {
    expect(moduleUrl('./projector', 'file:///app/apps/x/src/x.service.ts').href).toBe(
      'file:///app/apps/x/src/projector.ts',
    );
    expect(moduleUrl('../../y/src/main', 'file:///app/dist/apps/cli/src/up.command.js').href).toBe(
      'file:///app/dist/apps/y/src/main.js',
    );
    expect(fromSources(import.meta.url)).toBe(true);
  });

  it('ADR 0056 refuses a specifier with an extension or not relative, naming it', () => {
    expect(() => moduleUrl('./projector.ts', 'file:///a/b.ts')).toThrow(/got \.\/projector\.ts/);
    expect(() => moduleUrl('projector', 'file:///a/b.ts')).toThrow(/relative path without extension/);
  });
});
