// One row per aggregate a projection has set aside (ADR 0045): the event it could not apply
// and why, and how many later events of the same aggregate it skipped since. The row is
// written in the transaction that moves the checkpoint past the event, so the checkpoint
// never passes an event that is neither applied nor recorded here.
import { Column, Entity, PrimaryColumn } from 'typeorm';
import { sequenceColumn } from './integer-columns.js';

export const QUARANTINE_TABLE = 'tally_projection_quarantine';

/** Longest reason kept: enough to say what failed, too short to carry a payload. */
export const QUARANTINE_REASON_LENGTH = 300;

@Entity({ name: QUARANTINE_TABLE })
export class QuarantinedAggregate {
  @PrimaryColumn({ type: 'varchar', length: 128 }) projection!: string;
  /** The stream subject of the aggregate (a budget tree's or a work unit's). */
  @PrimaryColumn({ type: 'varchar', length: 255 }) subject!: string;
  /** The subject's last token: the root capability id or the work id the reads look up. */
  @Column({ name: 'aggregate_id', type: 'varchar', length: 255 }) aggregateId!: string;
  /** Stream sequence of the event that could not be applied. */
  @Column(sequenceColumn()) sequence!: number;
  @Column({ name: 'event_type', type: 'varchar', length: 128 }) eventType!: string;
  /** The error's kind, code and message with quoted text removed: never a payload. */
  @Column({ type: 'varchar', length: QUARANTINE_REASON_LENGTH }) reason!: string;
  @Column(sequenceColumn({ name: 'first_seen_at_ms' })) firstSeenAtMs!: number;
  /** Later events of the aggregate the runner skipped (their effects wait for a retry). */
  @Column(sequenceColumn({ name: 'skipped_events' })) skippedEvents!: number;
  /** The highest sequence of the aggregate set aside: the bad event or the last one skipped. */
  @Column(sequenceColumn({ name: 'last_sequence' })) lastSequence!: number;
  /** Where a retry resumes: `sequence` until a retry has applied part of the aggregate. */
  @Column(sequenceColumn({ name: 'resume_sequence' })) resumeSequence!: number;
}
