// The projection port: a named fold of one stream's events into tables, applied in
// batches inside the runner's transaction.
import type { StoredEvent } from '@tally/eventing';
import type { EntityManager } from 'typeorm';

export interface Projection {
  /** Stable name; the checkpoint row's key. */
  readonly name: string;
  readonly stream: string;
  readonly filterSubject: string;
  /** Every table this projection writes; rebuild empties them and digest hashes them. */
  readonly tables: readonly string[];
  /**
   * Writes the effects of `events` (ascending stream sequence, all above the checkpoint)
   * through `manager`, which is inside the batch transaction. An event is a fact, so a
   * projection must not throw on one; if it does, that is a bug and the batch rolls back.
   */
  apply(manager: EntityManager, events: readonly StoredEvent[]): Promise<void>;
}
