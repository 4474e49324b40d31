// The projection sets of both services, as the CLI rebuilds and verifies them.
import type { ProjectionSet } from '@tally/platform-app';

export function projectionSets(): ProjectionSet[] {
  return [];
}
