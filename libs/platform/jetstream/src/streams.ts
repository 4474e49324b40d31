// The streams every Tally service relies on, derived from TallyNames with every limit
// passed in explicitly (the KV buckets are in kv-buckets.ts). Each stream kind has its own
// policy (ADR 0002): the event streams are the ledger and never lose a message, the queues
// refuse work when full, and only the dead-letter stream ages out its oldest records.
import type { JetStreamManager } from '@nats-io/jetstream';
import type { TallyNames } from '@tally/contracts';
import { ensureStream, inspectStream, StreamConfigConflict, type StreamSpec } from './provisioning.js';

export interface StreamLimits {
  readonly storage: 'file' | 'memory';
  readonly replicas: number;
  readonly duplicateWindowMs: number;
  readonly maxMsgSizeBytes: number;
  /**
   * Byte limit of each event stream (the ledger), or -1 for none. A full event stream
   * refuses appends (discard: new); it never deletes an event to make room.
   */
  readonly eventMaxBytes: number;
  /** Byte limit of the work queue and of the command stream; a full one refuses new messages. */
  readonly queueMaxBytes: number;
  /** The dead-letter stream keeps at most this many bytes, for at most this long, dropping its oldest first. */
  readonly deadLetterMaxBytes: number;
  readonly deadLetterMaxAgeMs: number;
}

export type TallyStreamKind =
  | 'budgetEvents'
  | 'workEvents'
  /** Tenants, operator keys and signing keys (ADR 0010): ledger, with the event streams' policy. */
  | 'directoryEvents'
  /** Provider output kept by reference (ADR 0019): part of the record, with the event streams' policy. */
  | 'workOutput'
  | 'workQueue'
  | 'commands'
  | 'deadLetter';

/** Bad limits are a configuration bug: refuse them before they reach the server. */
function assertLimits(limits: StreamLimits): void {
  const bad: string[] = [];
  if (!Number.isInteger(limits.replicas) || limits.replicas < 1 || limits.replicas > 5)
    bad.push(`replicas=${limits.replicas} must be 1..5`);
  if (!(limits.duplicateWindowMs > 0)) bad.push(`duplicateWindowMs=${limits.duplicateWindowMs} must be > 0`);
  if (!(limits.eventMaxBytes === -1 || limits.eventMaxBytes > 0))
    bad.push(`eventMaxBytes=${limits.eventMaxBytes} must be -1 or > 0`);
  if (!(limits.queueMaxBytes > 0)) bad.push(`queueMaxBytes=${limits.queueMaxBytes} must be > 0`);
  if (!(limits.deadLetterMaxBytes > 0)) bad.push(`deadLetterMaxBytes=${limits.deadLetterMaxBytes} must be > 0`);
  if (!(limits.deadLetterMaxAgeMs > 0)) bad.push(`deadLetterMaxAgeMs=${limits.deadLetterMaxAgeMs} must be > 0`);
  // The server clamps the duplicate window to max_age; the stored value would then never match ours.
  if (limits.duplicateWindowMs > limits.deadLetterMaxAgeMs)
    bad.push(`duplicateWindowMs=${limits.duplicateWindowMs} exceeds deadLetterMaxAgeMs=${limits.deadLetterMaxAgeMs}`);
  if (!(limits.maxMsgSizeBytes > 0)) bad.push(`maxMsgSizeBytes=${limits.maxMsgSizeBytes} must be > 0`);
  if (bad.length > 0) throw new Error(`invalid stream limits: ${bad.join('; ')}`);
}

type Policy = Pick<StreamSpec, 'retention' | 'discard' | 'maxAgeMs' | 'maxBytes' | 'denyDelete' | 'denyPurge'>;

/** Each kind's policy, the one table ADR 0002 writes down. */
function policyOf(kind: TallyStreamKind, limits: StreamLimits): Policy {
  switch (kind) {
    case 'budgetEvents':
    case 'workEvents':
    case 'directoryEvents':
    case 'workOutput':
      // The ledger: no age or count limit, a byte limit only when the operator sets one, and
      // then a full stream refuses the append. No message can be deleted or purged.
      return {
        retention: 'limits',
        discard: 'new',
        maxAgeMs: 0,
        maxBytes: limits.eventMaxBytes,
        denyDelete: true,
        denyPurge: true,
      };
    case 'workQueue':
    case 'commands':
      // Acked messages leave on their own (work-queue retention); a full queue refuses new work.
      return {
        retention: 'workqueue',
        discard: 'new',
        maxAgeMs: 0,
        maxBytes: limits.queueMaxBytes,
        denyDelete: false,
        denyPurge: false,
      };
    case 'deadLetter':
      // Operational records: the oldest go first, by age or size, and an operator may clear them.
      return {
        retention: 'limits',
        discard: 'old',
        maxAgeMs: limits.deadLetterMaxAgeMs,
        maxBytes: limits.deadLetterMaxBytes,
        denyDelete: false,
        denyPurge: false,
      };
  }
}

function spec(
  name: string,
  subjects: string[],
  kind: TallyStreamKind,
  limits: StreamLimits,
): StreamSpec & {
  readonly kind: TallyStreamKind;
} {
  const { storage, replicas, duplicateWindowMs, maxMsgSizeBytes } = limits;
  return { name, subjects, kind, storage, replicas, duplicateWindowMs, maxMsgSizeBytes, ...policyOf(kind, limits) };
}

export type TallyStreamSpec = ReturnType<typeof spec>;

/** The seven Tally streams, each with its kind's policy. */
export function tallyStreamSpecs(names: TallyNames, limits: StreamLimits): TallyStreamSpec[] {
  assertLimits(limits);
  return [
    spec(names.budgetEventsStream, [names.budgetEventsWildcard], 'budgetEvents', limits),
    spec(names.workEventsStream, [names.workEventsWildcard], 'workEvents', limits),
    spec(names.directoryEventsStream, [names.directoryEventsWildcard], 'directoryEvents', limits),
    spec(names.workOutputStream, [names.workOutputWildcard], 'workOutput', limits),
    spec(names.workQueueStream, [names.workQueueSubject], 'workQueue', limits),
    spec(names.commandsStream, [`${names.namespace}.cmd.>`], 'commands', limits),
    spec(names.deadLetterStream, [names.deadLetterWildcard], 'deadLetter', limits),
  ];
}

export interface ProvisionedStream {
  readonly name: string;
  readonly outcome: 'created' | 'verified';
}

/**
 * Creates missing streams and verifies existing ones. Every stream is checked before
 * any is created, so a conflict leaves the server as it was found.
 */
export async function provisionTallyStreams(
  jsm: JetStreamManager,
  names: TallyNames,
  limits: StreamLimits,
): Promise<ProvisionedStream[]> {
  const specs = tallyStreamSpecs(names, limits);
  for (const s of specs) {
    const conflicts = await inspectStream(jsm, s);
    if (conflicts !== undefined && conflicts.length > 0) throw new StreamConfigConflict(s.name, conflicts);
  }
  const out: ProvisionedStream[] = [];
  // ensureStream checks again, so a stream changed by someone else in between is still refused.
  for (const s of specs) out.push({ name: s.name, outcome: await ensureStream(jsm, s) });
  return out;
}
