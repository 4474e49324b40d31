// The messages on a unit's live subject (core NATS, ADR 0036): each delta with the ordinal of
// the attempt that produced it, then the end. They are notifications; the unit's events stay
// the record, and a caller that misses the end reads it from them.
import { isObject, type Delta } from '@tally/orchestrator-dialects';
import type { LiveEnd } from './live-end.js';

export type LiveMessage =
  | { readonly kind: 'delta'; readonly ordinal: number; readonly delta: Delta }
  | { readonly kind: 'end'; readonly end: LiveEnd };

/** What the queue message asks the worker to publish: every delta and the end, or the end only. */
export type LiveMode = 'deltas' | 'end';

export function encodeLive(message: LiveMessage): string {
  return JSON.stringify(message);
}

/** Decodes a live message; anything else on the subject is ignored (it is not a record). */
export function decodeLive(data: Uint8Array): LiveMessage | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(data).toString('utf8'));
    if (!isObject(value)) return undefined;
    if (value['kind'] === 'delta' && typeof value['ordinal'] === 'number' && isObject(value['delta']))
      return value as unknown as LiveMessage;
    if (value['kind'] === 'end' && isObject(value['end'])) return value as unknown as LiveMessage;
  } catch {
    // Not ours.
  }
  return undefined;
}
