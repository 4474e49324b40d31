// A provider's reply must be recorded once, whatever its size (ADR 0019). The commit that
// records it holds the reply twice (AttemptSettled and, in the same commit, WorkCompleted),
// so a reply past half the inline limit would make a commit the stream refuses; the attempt
// would then be settled unknown on redelivery and the provider called (and paid) again.
// Such a reply is written to the work-output stream first, and the events keep its prefix
// and a reference. Past output_bytes_max the reply is cut, with a marker naming what it was.
import { createHash } from 'node:crypto';
import { sizeLimitsOf } from '@tally/contracts';
import type { AttemptOutcome, OpaqueJson, OutputRef, WorkUnitState } from '@tally/orchestrator-domain';
import type { OutputStore } from './ports.js';

export interface OutputLimits {
  /** The most bytes of reply (text and parts) one event carries inline. */
  readonly inlineBytesMax: number;
  /** The prefix an event keeps of a reply stored by reference, for previews and projections. */
  readonly previewBytes: number;
  /** The largest reply kept at all; past it the reply is cut with a marker. */
  readonly bytesMax: number;
}

/** Projections and previews need no more than this of a long reply. */
const PREVIEW_BYTES_MAX = 64 * 1024;

export function outputLimitsOf(messageBytesMax: number, bytesMax: number): OutputLimits {
  // Twice in one commit: the attempt's settlement and the unit's completion.
  const inlineBytesMax = Math.floor(sizeLimitsOf(messageBytesMax).outputInlineBytesMax / 2);
  const previewBytes = Math.min(PREVIEW_BYTES_MAX, Math.floor(inlineBytesMax / 4));
  if (!(bytesMax >= inlineBytesMax))
    throw new Error(
      `orchestrator.output_bytes_max=${bytesMax} is below the ${inlineBytesMax} bytes a reply may take inline; raise it`,
    );
  return { inlineBytesMax, previewBytes, bytesMax };
}

/** What is kept by reference: the reply's text and its structured parts. */
export interface OutputBlob {
  readonly output: string;
  readonly output_parts?: readonly OpaqueJson[];
}

export const encodeOutputBlob = (blob: OutputBlob): Uint8Array => Buffer.from(JSON.stringify(blob), 'utf8');

export function decodeOutputBlob(bytes: Uint8Array): OutputBlob {
  const parsed = JSON.parse(Buffer.from(bytes).toString('utf8')) as Partial<OutputBlob>;
  if (typeof parsed.output !== 'string') throw new Error('stored output has no text');
  return parsed as OutputBlob;
}

export const sha256Hex = (bytes: Uint8Array | string): string => createHash('sha256').update(bytes).digest('hex');

/** The longest prefix of `text` of at most `bytes` UTF-8 bytes that ends on a character. */
export function utf8Prefix(text: string, bytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= bytes) return text;
  let end = bytes;
  // Back off continuation bytes (10xxxxxx) so the cut never splits a character.
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

function cutWithMarker(text: string, keepBytes: number, why: string): string {
  const total = Buffer.byteLength(text, 'utf8');
  const kept = utf8Prefix(text, keepBytes);
  return `${kept}\n[${why}: ${Buffer.byteLength(kept, 'utf8')} of ${total} bytes kept, sha256 ${sha256Hex(text)}]`;
}

const replyBytes = (o: AttemptOutcome): number =>
  Buffer.byteLength(o.output ?? '', 'utf8') +
  (o.output_parts === undefined ? 0 : Buffer.byteLength(JSON.stringify(o.output_parts), 'utf8'));

/**
 * The outcome as it may be recorded: a reply past the hard bound cut (its parts, which repeat
 * its text, dropped), a failed attempt's partial output cut to the preview, and a reply past the
 * inline limit returned with the blob to store. Pure, so the worker's only I/O is the write.
 */
export function boundOutcome(
  outcome: AttemptOutcome,
  limits: OutputLimits,
): { outcome: AttemptOutcome; blob?: OutputBlob } {
  let o = outcome;
  if (o.partial_output !== undefined && Buffer.byteLength(o.partial_output, 'utf8') > limits.previewBytes)
    o = { ...o, partial_output: cutWithMarker(o.partial_output, limits.previewBytes, 'partial output cut by Tally') };
  if (o.output === undefined || replyBytes(o) <= limits.inlineBytesMax) return { outcome: o };
  if (replyBytes(o) > limits.bytesMax) {
    const { output_parts: _dropped, ...rest } = o;
    o = {
      ...rest,
      output: cutWithMarker(o.output!, limits.bytesMax - 1024, 'output cut by Tally at output_bytes_max'),
    };
    if (replyBytes(o) <= limits.inlineBytesMax) return { outcome: o };
  }
  const blob: OutputBlob = {
    output: o.output!,
    ...(o.output_parts === undefined ? {} : { output_parts: o.output_parts }),
  };
  return { outcome: o, blob };
}

/** The outcome with its reply replaced by a prefix and the reference to the stored whole. */
export function referencedOutcome(outcome: AttemptOutcome, ref: OutputRef, limits: OutputLimits): AttemptOutcome {
  const { output_parts: _stored, ...rest } = outcome;
  return { ...rest, output: utf8Prefix(outcome.output ?? '', limits.previewBytes), output_ref: ref };
}

/**
 * When the blob cannot be written, the call still happened and was paid: it is recorded with
 * what fits inline and a marker, rather than not at all (which would dispatch it again).
 */
export function inlineFallback(outcome: AttemptOutcome, limits: OutputLimits): AttemptOutcome {
  const { output_parts: _lost, ...rest } = outcome;
  return {
    ...rest,
    output: cutWithMarker(outcome.output ?? '', limits.inlineBytesMax - 1024, 'output cut: it could not be stored'),
  };
}

/** Resolves a recorded reply to the whole of it: the stored blob when the event has a reference. */
export async function resolveOutput(
  store: OutputStore,
  recorded: { readonly output: string; readonly output_parts?: readonly OpaqueJson[]; readonly output_ref?: OutputRef },
): Promise<OutputBlob> {
  if (recorded.output_ref === undefined)
    return {
      output: recorded.output,
      ...(recorded.output_parts === undefined ? {} : { output_parts: recorded.output_parts }),
    };
  return decodeOutputBlob(await store.get(recorded.output_ref));
}

/** The unit with its completion's whole reply in place of the prefix, for whoever answers a caller from it. */
export async function withWholeOutput(store: OutputStore, state: WorkUnitState): Promise<WorkUnitState> {
  const c = state.completion;
  if (c?.output_ref === undefined) return state;
  const whole = await resolveOutput(store, c);
  const { output_parts: _prefixParts, ...rest } = c;
  return {
    ...state,
    completion: {
      ...rest,
      output: whole.output,
      ...(whole.output_parts === undefined ? {} : { output_parts: whole.output_parts }),
    },
  };
}
