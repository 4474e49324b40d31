// The web console's files (issue 12, ADR 0034): plain HTML, CSS and JavaScript with no
// build step, and Chart.js's own UMD bundle from the installed package. All are read once
// at boot into a fixed table, so a request can only ever name one of these files.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ConsoleAsset {
  readonly body: Buffer;
  readonly contentType: string;
}

const CONSOLE_DIR = fileURLToPath(new URL('../../console/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The console's own files, by the name the page asks for. */
const OWN_FILES = ['index.html', 'console.js', 'console.css', 'favicon.svg'];

/**
 * What the console may load, and nothing else: scripts, styles and calls to this origin only.
 * No inline script or style (Chart.js sizes its canvas through the CSSOM, which CSP allows).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function typeOf(name: string): string {
  const ext = name.slice(name.lastIndexOf('.'));
  const type = TYPES[ext];
  if (!type) throw new Error(`console asset ${name} has no known content type`);
  return type;
}

/** Reads every asset; a missing file stops the boot, naming it. */
export function loadConsoleAssets(): ReadonlyMap<string, ConsoleAsset> {
  const assets = new Map<string, ConsoleAsset>();
  for (const name of OWN_FILES)
    assets.set(name, { body: readFileSync(join(CONSOLE_DIR, name)), contentType: typeOf(name) });
  // chart.js exports no path to its UMD bundle; it sits beside the CommonJS entry.
  const chartDir = dirname(createRequire(import.meta.url).resolve('chart.js'));
  assets.set('vendor/chart.umd.min.js', {
    body: readFileSync(join(chartDir, 'chart.umd.min.js')),
    contentType: typeOf('chart.umd.min.js'),
  });
  return assets;
}
