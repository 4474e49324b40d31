// `tally nats-config --out DIR`: writes the files generated from the NATS permissions module
// (ADR 0015), so the checked-in deploy/ files are regenerated rather than edited by hand.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { natsDeployFiles } from '@tally/platform-app';
import { ExitCode } from './cli/exit-codes.js';

export function writeNatsConfig(out: string): number {
  for (const [path, text] of Object.entries(natsDeployFiles())) {
    const file = join(out, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    process.stdout.write(`tally nats-config: wrote ${path}\n`);
  }
  return ExitCode.ok;
}
