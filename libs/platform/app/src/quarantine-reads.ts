// What a service does about the aggregates its projections have quarantined (ADR 0045):
// a read of one answers 503 problem+json naming the projection, the event's sequence and
// its type (never its content); the service stays ready but degraded while any is left.
import type { QuarantineEntry, QuarantineWatch } from '@tally/platform-typeorm';
import type { ReadinessCheck } from './health.js';
import { ProblemException } from './problem.js';

/** How stale a replica's copy of the quarantine may be when another replica holds the projector lease. */
export const QUARANTINE_REFRESH_MS = 1_000;

export const QUARANTINED_PROBLEM_TYPE = 'projection_quarantined';

/** The answer to a read of a quarantined aggregate; `what` names it for the reader ("budget tree", "work unit"). */
export function quarantinedProblem(entry: QuarantineEntry, what: string): ProblemException {
  const detail =
    `projection ${entry.projection} could not apply event ${entry.sequence} (${entry.eventType}) of this ${what}, ` +
    'so its reads are refused rather than served stale until a release applies it (tally projections status)';
  return new ProblemException(
    503,
    QUARANTINED_PROBLEM_TYPE,
    `This ${what} is quarantined by its projection`,
    [],
    detail,
  );
}

/** Throws the 503 when the aggregate is quarantined; a map lookup, no query. */
export function refuseIfQuarantined(
  quarantine: QuarantineWatch,
  projection: string,
  aggregateId: string,
  what: string,
): void {
  const entry = quarantine.find(projection, aggregateId);
  if (entry) throw quarantinedProblem(entry, what);
}

/**
 * Quarantined aggregates leave the service ready (every other aggregate reads current) but
 * degraded, naming the count per projection and the command that lists them.
 */
export function quarantineReadiness(quarantine: QuarantineWatch): ReadinessCheck {
  return {
    name: 'quarantine',
    check: async () => {
      const counts = new Map<string, number>();
      for (const entry of quarantine.all()) counts.set(entry.projection, (counts.get(entry.projection) ?? 0) + 1);
      const degraded = [...counts].map(
        ([projection, n]) => `projection ${projection} has ${n} quarantined aggregate(s): tally projections status`,
      );
      return { ok: true, degraded, details: { quarantined_aggregates: Object.fromEntries(counts) } };
    },
  };
}
