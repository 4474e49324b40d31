// Every size limit that must fit inside another, derived in one place from the streams'
// largest message (ADR 0016). An HTTP body becomes (part of) one event; an event is one
// stream message; a provider's output is kept in its completion event only up to what is
// left of that message; a dead letter wraps a refused message (base64, 4/3 larger) and must
// itself be one message, so its copy of the data is cut, with a digest, to what fits.

/** Room kept for NATS and Tally headers on every message. */
export const HEADER_ROOM_BYTES = 2048;
/** Room for an event's envelope and the other fields beside the largest one (ids, usage, a receipt). */
export const ENVELOPE_ROOM_BYTES = 16 * 1024;
/** Room for a dead letter's own fields (reason, detail, field errors, headers) beside the data it keeps. */
export const DEAD_LETTER_ROOM_BYTES = 16 * 1024;
/** The smallest message size the limits below still make sense for. */
export const MESSAGE_BYTES_MIN = 64 * 1024;

export interface SizeLimits {
  /** The streams' max_msg_size: the largest message any Tally stream stores. */
  readonly messageBytesMax: number;
  /** The largest commit (one message) the event store appends. */
  readonly eventBytesMax: number;
  /** The largest HTTP request body a service reads: it must fit in the event it becomes. */
  readonly httpBodyBytesMax: number;
  /** Provider output kept in a completion event; past it the output does not fit in the event. */
  readonly outputInlineBytesMax: number;
  /** The most bytes of a refused message a dead letter keeps (the rest is replaced by its size and digest). */
  readonly deadLetterDataBytesMax: number;
}

export function sizeLimitsOf(messageBytesMax: number): SizeLimits {
  if (!Number.isInteger(messageBytesMax) || messageBytesMax < MESSAGE_BYTES_MIN)
    throw new Error(`messageBytesMax=${messageBytesMax} must be an integer of at least ${MESSAGE_BYTES_MIN}`);
  const eventBytesMax = messageBytesMax - HEADER_ROOM_BYTES;
  const httpBodyBytesMax = eventBytesMax - ENVELOPE_ROOM_BYTES;
  const outputInlineBytesMax = eventBytesMax - ENVELOPE_ROOM_BYTES;
  // base64 turns 3 bytes into 4.
  const deadLetterDataBytesMax = Math.floor(((messageBytesMax - HEADER_ROOM_BYTES - DEAD_LETTER_ROOM_BYTES) * 3) / 4);
  const limits = { messageBytesMax, eventBytesMax, httpBodyBytesMax, outputInlineBytesMax, deadLetterDataBytesMax };
  assertNested(limits);
  return limits;
}

/** The relations the limits exist for; a change to the derivation that breaks one fails here, not in production. */
function assertNested(l: SizeLimits): void {
  const broken: string[] = [];
  if (!(l.eventBytesMax + HEADER_ROOM_BYTES <= l.messageBytesMax)) broken.push('an event must fit in a message');
  if (!(l.httpBodyBytesMax + ENVELOPE_ROOM_BYTES <= l.eventBytesMax)) broken.push('a body must fit in an event');
  if (!(l.outputInlineBytesMax + ENVELOPE_ROOM_BYTES <= l.eventBytesMax))
    broken.push('inline output must fit in an event');
  if (
    !(Math.ceil((l.deadLetterDataBytesMax * 4) / 3) + DEAD_LETTER_ROOM_BYTES + HEADER_ROOM_BYTES <= l.messageBytesMax)
  )
    broken.push('a dead letter must fit in a message');
  if (broken.length > 0) throw new Error(`size limits do not nest: ${broken.join('; ')}`);
}
