// What a service contributes to the projection database: its entities, migrations and
// projections. The service host runs them live; `tally replay` and `tally verify`
// rebuild them from the streams.
import type { TallyNames } from '@tally/contracts';
import type { TallyDataSourceOptions } from '@tally/platform-typeorm';
import type { ProjectionSpec } from './projection-host.js';

export interface ProjectionSet {
  readonly service: string;
  readonly entities: TallyDataSourceOptions['entities'];
  readonly migrations: TallyDataSourceOptions['migrations'];
  specs(names: TallyNames): ProjectionSpec[];
}
