// What the HTTP reads of a service know of the quarantine (ADR 0045): a small in-memory copy
// of the table, refreshed every `refreshMs` (the projector may run on another replica) and
// told at once of an aggregate the local projection thread has just quarantined, so a read
// of it costs a map lookup and never a query.
import type { DataSource } from 'typeorm';
import type { QuarantinedAggregate } from './quarantine.entity.js';
import { listQuarantine } from './quarantine-store.js';

export interface QuarantineWatchOptions {
  /** How often the copy is read again from the table. */
  readonly refreshMs: number;
}

/** What a read needs of a row: which projection, which event, what kind. */
export type QuarantineEntry = Pick<
  QuarantinedAggregate,
  'projection' | 'subject' | 'aggregateId' | 'sequence' | 'eventType' | 'firstSeenAtMs' | 'skippedEvents'
>;

const key = (projection: string, aggregateId: string) => `${projection}\u0000${aggregateId}`;

export class QuarantineWatch {
  private entries = new Map<string, QuarantineEntry>();
  /** Entries told since the last refresh began: that refresh may have read the table before they committed. */
  private noted = new Map<string, QuarantineEntry>();
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly dataSource: DataSource,
    private readonly options: QuarantineWatchOptions,
  ) {
    if (!(options.refreshMs >= 1)) throw new Error('refreshMs must be at least 1');
  }

  /** Reads the table once, then keeps reading it in the background until stop(). */
  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh().catch(() => undefined), this.options.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Replaces the copy with the table's rows; concurrent callers share one read. A failed read keeps the last copy. */
  refresh(): Promise<void> {
    this.refreshing ??= (async () => {
      // Rows told before this read began had committed by then, so the read sees them; those
      // told while it runs may have committed after it looked, so they are kept on top of it.
      this.noted = new Map();
      try {
        const rows = await listQuarantine(this.dataSource.manager);
        const entries = new Map(rows.map((row) => [key(row.projection, row.aggregateId), quarantineEntryOf(row)]));
        for (const [k, entry] of this.noted) if (!entries.has(k)) entries.set(k, entry);
        this.entries = entries;
      } finally {
        this.refreshing = undefined;
      }
    })();
    return this.refreshing;
  }

  /** An aggregate quarantined in this process: refused from now on, before the next refresh. */
  note(entry: QuarantineEntry): void {
    const k = key(entry.projection, entry.aggregateId);
    const kept = quarantineEntryOf(entry);
    this.entries.set(k, kept);
    this.noted.set(k, kept);
  }

  find(projection: string, aggregateId: string): QuarantineEntry | undefined {
    return this.entries.get(key(projection, aggregateId));
  }

  /** Every aggregate known to be quarantined, for readiness. */
  all(): QuarantineEntry[] {
    return [...this.entries.values()];
  }
}

/** The fields of a row a read needs, as a plain object (it crosses from the projection thread). */
export function quarantineEntryOf(row: QuarantineEntry): QuarantineEntry {
  const { projection, subject, aggregateId, sequence, eventType, firstSeenAtMs, skippedEvents } = row;
  return { projection, subject, aggregateId, sequence, eventType, firstSeenAtMs, skippedEvents };
}
