// The optimistic-concurrency loop: load, decide, append; on conflict reload and decide
// again on fresh state. The bound is explicit, because a hot aggregate must shed load
// with a named error rather than spin.
import type { EventMessage } from '@tally/contracts';
import { ConcurrencyConflict, type AppendResult, type EventStore, type StoredEvent } from './event-store.port.js';

export interface AggregateView<S> {
  readonly state: S;
  readonly lastSequence: number;
}

export interface DecideAndAppendOptions<S, R> {
  readonly store: EventStore;
  readonly subject: string;
  /** Returns the current state; called again after each conflict. */
  readonly load: () => Promise<AggregateView<S>>;
  /** Pure decision on the loaded state: events to append and the result to return. */
  readonly decide: (state: S) => { events: readonly Omit<EventMessage, 'schemaVersion'>[]; result: R };
  readonly maxAttempts: number;
}

export class RetriesExhausted extends Error {
  override readonly name = 'RetriesExhausted';
  constructor(
    readonly subject: string,
    readonly attempts: number,
  ) {
    super(`gave up on ${subject} after ${attempts} concurrency conflicts`);
  }
}

export interface DecidedAndAppended<R> {
  readonly result: R;
  readonly append: AppendResult | undefined;
  readonly attempts: number;
}

export async function decideAndAppend<S, R>(options: DecideAndAppendOptions<S, R>): Promise<DecidedAndAppended<R>> {
  if (!(options.maxAttempts >= 1)) throw new Error('maxAttempts must be at least 1');
  for (let attempt = 1; attempt <= options.maxAttempts; attempt++) {
    const view = await options.load();
    const { events, result } = options.decide(view.state);
    if (events.length === 0) return { result, append: undefined, attempts: attempt };
    try {
      const append = await options.store.append(options.subject, events, view.lastSequence);
      return { result, append, attempts: attempt };
    } catch (error) {
      if (!(error instanceof ConcurrencyConflict)) throw error;
    }
  }
  throw new RetriesExhausted(options.subject, options.maxAttempts);
}

/** Folds stored events into state: the one place `evolve` meets the stream. */
export function foldEvents<S, P>(
  initial: S,
  events: readonly StoredEvent<P>[],
  evolve: (state: S, event: StoredEvent<P>) => S,
): S {
  let state = initial;
  for (const event of events) state = evolve(state, event);
  return state;
}
