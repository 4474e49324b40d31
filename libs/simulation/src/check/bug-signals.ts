// Errors that are never an operating outcome: a broken invariant of either domain, a tree
// store that sees a conflict with nothing new to read, a receipt the ledger refused, or a
// plain programming error. Whatever faults strike, the code under test must never throw one.
const BUG_MESSAGES = [
  'work unit invariant broken',
  'conflicts without new events',
  'was rejected:',
  'does not decode',
] as const;

const BUG_NAMES = new Set(['AssertionError', 'TypeError', 'ReferenceError', 'RangeError', 'SyntaxError']);

export function isBugSignal(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (BUG_NAMES.has(error.name)) return true;
  return BUG_MESSAGES.some((m) => error.message.includes(m));
}
