// Start-up failures end the process with a clear message and a distinct exit code,
// never with a bare stack trace: 78 (EX_CONFIG) for configuration, 69 (EX_UNAVAILABLE)
// for a dependency that does not answer, 1 for anything else.
import { ConfigError } from './config.loader.js';
import { TopologyMismatch } from './topology.js';

export const EXIT_CONFIG = 78;
export const EXIT_UNAVAILABLE = 69;

export class DependencyUnavailable extends Error {
  override readonly name = 'DependencyUnavailable';
  constructor(
    readonly dependency: string,
    readonly hint: string,
    cause?: unknown,
  ) {
    super(`${dependency} is not available. ${hint}`, { cause });
  }
}

export async function bootOrExit(service: string, main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (error) {
    process.stderr.write(`\n${service} did not start.\n${describeBootError(error)}\n\n`);
    process.exit(exitCodeOf(error));
  }
}

export function describeBootError(error: unknown): string {
  if (error instanceof ConfigError)
    return `${error.message}\nFix the setting (file named by TALLY_CONFIG, or the environment variable) and start again.`;
  if (error instanceof DependencyUnavailable || error instanceof TopologyMismatch) return error.message;
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

export function exitCodeOf(error: unknown): number {
  if (error instanceof ConfigError || error instanceof TopologyMismatch) return EXIT_CONFIG;
  if (error instanceof DependencyUnavailable) return EXIT_UNAVAILABLE;
  return 1;
}
