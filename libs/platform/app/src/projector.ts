// What a service projects, in a form both the main thread and a projection worker thread
// can load: a module (named by URL, so a worker thread can import it) exporting `projector`.
import type { TallyNames } from '@tally/contracts';
import type { TallyDataSourceOptions } from '@tally/platform-typeorm';
import type { TallyConfig } from './config.schema.js';
import type { JsonLogger } from './json-logger.js';
import type { ProjectionSpec } from './projection-host.js';

export interface ProjectorContext {
  readonly config: TallyConfig;
  readonly names: TallyNames;
  readonly logger: JsonLogger;
}

export interface ProjectorModule {
  readonly database: Pick<TallyDataSourceOptions, 'entities' | 'migrations'>;
  specs(ctx: ProjectorContext): ProjectionSpec[];
}

export interface ProjectorDefinition {
  /** URL of the module that exports `projector: ProjectorModule` (a worker thread imports it). */
  readonly url: string;
  /** The same module, already imported, for the main thread. */
  readonly module: ProjectorModule;
}

/** Loads `projector` from the module at `url`, and says clearly when it is not there. */
export async function importProjector(url: string): Promise<ProjectorModule> {
  const loaded = (await import(url)) as { projector?: ProjectorModule };
  if (!loaded.projector || typeof loaded.projector.specs !== 'function')
    throw new Error(`${url} does not export a projector`);
  return loaded.projector;
}
