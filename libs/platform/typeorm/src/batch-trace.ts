// What the runner needs to know about a batch apart from its rows: that it is in stream
// order, how many commits it holds and where they split, and the span that ties its
// transaction to the requests whose events it applies.
import { propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Link } from '@opentelemetry/api';
import type { StoredEvent } from '@tally/eventing';

/** Events of one commit share a sequence and ascend by position; commits ascend by sequence. */
export function assertAscending(events: readonly StoredEvent[]): void {
  for (let i = 1; i < events.length; i++) {
    const [a, b] = [events[i - 1]!, events[i]!];
    const ascending = b.sequence > a.sequence || (b.sequence === a.sequence && (b.position ?? 0) > (a.position ?? 0));
    if (!ascending)
      throw new Error(
        `batch is not in ascending stream order at index ${i}: ${a.sequence}/${a.position ?? 0} then ${b.sequence}/${b.position ?? 0}`,
      );
  }
}

export function countCommits(events: readonly StoredEvent[]): number {
  let commits = 0;
  for (let i = 0; i < events.length; i++) if (i === 0 || events[i]!.sequence !== events[i - 1]!.sequence) commits++;
  return commits;
}

/** Links a batch keeps to the traces of its commits beyond the first: enough to find them, bounded. */
const BATCH_LINKS_MAX = 32;

/**
 * One span per applied batch when tracing is on: a child of the first commit's trace (the
 * request that appended it), linked to the traces of the others, so a request's trace ends
 * with the projection that made it readable.
 */
export function traced<T>(projection: string, events: readonly StoredEvent[], apply: () => Promise<T>): Promise<T> {
  const traced = [...new Set(events.flatMap((e) => (e.traceparent ? [e.traceparent] : [])))];
  if (traced.length === 0) return apply();
  const contexts = traced.map((traceparent) => propagation.extract(ROOT_CONTEXT, { traceparent }));
  const links: Link[] = contexts.slice(1, 1 + BATCH_LINKS_MAX).flatMap((c) => {
    const span = trace.getSpanContext(c);
    return span ? [{ context: span }] : [];
  });
  const tracer = trace.getTracer('tally');
  return tracer.startActiveSpan(
    `projection ${projection}`,
    { kind: SpanKind.CONSUMER, links, attributes: { 'tally.projection': projection, 'tally.events': events.length } },
    contexts[0]!,
    async (span) => {
      try {
        return await apply();
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** The batch split into its commits (one stream message each), in order. */
export function commitsOf(events: readonly StoredEvent[]): StoredEvent[][] {
  const commits: StoredEvent[][] = [];
  for (const event of events) {
    const last = commits[commits.length - 1];
    if (last && last[0]!.sequence === event.sequence) last.push(event);
    else commits.push([event]);
  }
  return commits;
}
