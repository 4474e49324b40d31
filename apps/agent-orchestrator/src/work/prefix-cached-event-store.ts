// An EventStore decorator that remembers each recently loaded unit's events. A unit's
// stored events never change (the event stream denies delete and purge), so a later load
// only reads what was appended after the cached prefix: a redelivered unit, a worker that
// lost an append race, and the API's reads load units again and again, and without this
// each load re-read the whole unit.
import type { AppendResult, EventStore, LoadResult, StoredEvent } from '@tally/eventing';
import type { EventMessage } from '@tally/contracts';

interface Prefix {
  readonly events: readonly StoredEvent[];
  readonly lastSequence: number;
}

export class PrefixCachedEventStore implements EventStore {
  private readonly prefixes = new Map<string, Prefix>();

  constructor(
    private readonly inner: EventStore,
    /** Most subjects remembered; the least recently loaded is forgotten first. */
    private readonly subjectsMax: number,
  ) {
    if (!(subjectsMax >= 1)) throw new Error('subjectsMax must be >= 1');
  }

  append(
    subject: string,
    events: readonly Omit<EventMessage, 'schemaVersion'>[],
    expectedSequence: number,
  ): Promise<AppendResult> {
    return this.inner.append(subject, events, expectedSequence);
  }

  async load(subject: string, afterSequence = 0): Promise<LoadResult> {
    const cached = this.prefixes.get(subject);
    if (!cached || afterSequence > cached.lastSequence) {
      const loaded = await this.inner.load(subject, afterSequence);
      if (afterSequence === 0) this.remember(subject, { events: loaded.events, lastSequence: loaded.lastSequence });
      return loaded;
    }
    const fresh = await this.inner.load(subject, cached.lastSequence);
    if (fresh.lastSequence < cached.lastSequence) {
      // The stream went backwards (it was recreated): the prefix is no longer the subject's history.
      this.prefixes.delete(subject);
      return this.inner.load(subject, afterSequence);
    }
    const events = fresh.events.length === 0 ? cached.events : [...cached.events, ...fresh.events];
    this.remember(subject, { events, lastSequence: fresh.lastSequence });
    return {
      events: afterSequence === 0 ? events : events.filter((e) => e.sequence > afterSequence),
      lastSequence: fresh.lastSequence,
    };
  }

  private remember(subject: string, prefix: Prefix): void {
    this.prefixes.delete(subject);
    this.prefixes.set(subject, prefix);
    if (this.prefixes.size > this.subjectsMax) this.prefixes.delete(this.prefixes.keys().next().value!);
  }
}
