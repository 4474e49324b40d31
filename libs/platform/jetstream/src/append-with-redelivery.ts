// Resolving an append whose outcome is unknown (timeout, lost connection, server
// restart) by republishing the SAME commit (the same events) with the SAME expected
// sequence.
//
// Why that is safe: within the stream's duplicate window the server answers a
// republished commit id with the original ack (duplicate=true), and it checks the
// message id before the expected sequence. After the window, the expected sequence
// still protects us: if the commit had landed the subject moved on, so the republish
// fails with a conflict, and a read of the subject then tells whether our commit is there.
// A commit lands whole or not at all, so there is never a remainder to append.
import type { EventMessage } from '@tally/contracts';
import { AppendOutcomeUnknown, ConcurrencyConflict, type AppendResult, type EventStore } from '@tally/eventing';

export interface RedeliveryOptions {
  /** Total attempts, the first included. */
  readonly attemptsMax: number;
  /** Pause before the second attempt; it doubles per attempt up to retryDelayMaxMs. */
  readonly retryDelayMs: number;
  readonly retryDelayMaxMs: number;
}

type NewEvent = Omit<EventMessage, 'schemaVersion'>;

/**
 * Appends like EventStore.append, but rides out AppendOutcomeUnknown. It still throws
 * ConcurrencyConflict when another writer got there first (the caller decides again),
 * and AppendOutcomeUnknown once attemptsMax is spent.
 */
export async function appendWithRedelivery(
  store: EventStore,
  subject: string,
  events: readonly NewEvent[],
  expectedSequence: number,
  options: RedeliveryOptions,
): Promise<AppendResult> {
  return append(store, subject, events, expectedSequence, options, false);
}

/**
 * For a caller that already got AppendOutcomeUnknown from a plain append (for example
 * out of decideAndAppend): republishes the same events with the same expected
 * sequence, and reads the subject when that conflicts. Returns the commit's sequence
 * (duplicates all true when it had landed), or throws ConcurrencyConflict when it had
 * not and another writer moved the aggregate on.
 */
export async function republishAfterUnknown(
  store: EventStore,
  subject: string,
  events: readonly NewEvent[],
  expectedSequence: number,
  options: RedeliveryOptions,
): Promise<AppendResult> {
  return append(store, subject, events, expectedSequence, options, true);
}

async function append(
  store: EventStore,
  subject: string,
  events: readonly NewEvent[],
  expectedSequence: number,
  options: RedeliveryOptions,
  startUnknown: boolean,
): Promise<AppendResult> {
  if (!(options.attemptsMax >= 1)) throw new Error('attemptsMax must be at least 1');
  let lastError: unknown;
  let outcomeUnknown = startUnknown;
  for (let attempt = 1; attempt <= options.attemptsMax; attempt++) {
    if (attempt > 1) await delay(Math.min(options.retryDelayMaxMs, options.retryDelayMs * 2 ** (attempt - 2)));
    try {
      return await store.append(subject, events, expectedSequence);
    } catch (error) {
      lastError = error;
      if (error instanceof ConcurrencyConflict && !outcomeUnknown) throw error;
      if (!(error instanceof ConcurrencyConflict) && !(error instanceof AppendOutcomeUnknown)) throw error;
      if (error instanceof AppendOutcomeUnknown) {
        outcomeUnknown = true;
        continue;
      }
    }
    // A conflict after an unknown outcome: perhaps it was our own earlier attempt.
    try {
      const resolved = await resolveFromStream(store, subject, events, expectedSequence);
      if (resolved) return resolved;
      throw lastError;
    } catch (error) {
      if (!(error instanceof AppendOutcomeUnknown)) throw error;
      // The read or the completing append did not get through either; try again.
      lastError = error;
    }
  }
  throw lastError instanceof AppendOutcomeUnknown
    ? lastError
    : new AppendOutcomeUnknown(
        subject,
        events.map((e) => e.eventId),
        lastError,
      );
}

/**
 * Reads the subject after expectedSequence and looks for our commit: all of our event
 * ids at one sequence. Returns undefined when none of them landed (a genuine conflict).
 */
async function resolveFromStream(
  store: EventStore,
  subject: string,
  events: readonly NewEvent[],
  expectedSequence: number,
): Promise<AppendResult | undefined> {
  let loaded;
  try {
    loaded = await store.load(subject, expectedSequence);
  } catch (error) {
    throw new AppendOutcomeUnknown(
      subject,
      events.map((e) => e.eventId),
      error,
    );
  }
  const stored = new Map(loaded.events.map((e) => [e.event.eventId, e.sequence]));
  const found = events.map((event) => stored.get(event.eventId));
  if (found.every((sequence) => sequence === undefined)) return undefined;
  const sequence = found[0];
  // Commits are atomic: a part of ours in the stream, or ours spread over two sequences, is a broken store.
  if (sequence === undefined || found.some((s) => s !== sequence)) {
    throw new Error(`commit ${events[0]!.eventId} on ${subject} is only partly in the stream: ${found.join(', ')}`);
  }
  return { sequences: events.map(() => sequence), duplicates: events.map(() => true), lastSequence: sequence };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
