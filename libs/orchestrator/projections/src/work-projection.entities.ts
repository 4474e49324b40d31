// The orchestrator's read model: one row per work unit (with its serialized fold state,
// so the next event evolves from the row), the session log and the model-visible
// messages per turn, and the warnings a replay must also reproduce (and O4 expects none).
import { countColumn, sequenceColumn } from '@tally/platform-typeorm';
import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

export const WORK_UNIT_TABLE = 'orch_work_unit';
export const SESSION_ENTRY_TABLE = 'orch_session_entry';
export const SESSION_MESSAGE_TABLE = 'orch_session_message';
export const PROJECTION_WARNING_TABLE = 'orch_projection_warning';

@Entity({ name: WORK_UNIT_TABLE })
@Index('orch_work_unit_session', ['sessionId', 'submittedSequence'])
@Index('orch_work_unit_tenant', ['tenantId', 'submittedSequence'])
export class WorkUnitRow {
  @PrimaryColumn({ name: 'work_id', type: 'varchar', length: 64 }) workId!: string;
  @Column({ name: 'session_id', type: 'varchar', length: 256 }) sessionId!: string;
  /** Read scope: a tenant's operators see its units; a capability token sees the units submitted with it. */
  @Column({ name: 'tenant_id', type: 'varchar', length: 64, default: 'default' }) tenantId!: string;
  @Column({ name: 'token_fingerprint', type: 'varchar', length: 128, default: '' }) tokenFingerprint!: string;
  @Column({ name: 'status', type: 'varchar', length: 16 }) status!: string;
  @Column({ name: 'error', type: 'text', nullable: true }) error!: string | null;
  @Column({ name: 'output', type: 'text', nullable: true }) output!: string | null;
  /** The wire receipt as JSON text. */
  @Column({ name: 'receipt', type: 'text', nullable: true }) receipt!: string | null;
  /** Stream sequence of WorkSubmitted: the unit's place in its session (commit order). */
  @Column(sequenceColumn({ name: 'submitted_sequence' })) submittedSequence!: number;
  @Column({ name: 'submitted_at', type: 'varchar', length: 40 }) submittedAt!: string;
  @Column(sequenceColumn({ name: 'last_sequence' })) lastSequence!: number;
  /** The serialized fold state the next event evolves from. */
  @Column({ name: 'state', type: 'text' }) state!: string;
}

@Entity({ name: SESSION_ENTRY_TABLE })
@Index('orch_session_entry_work', ['workId'])
export class SessionEntryRow {
  @PrimaryColumn({ name: 'session_id', type: 'varchar', length: 256 }) sessionId!: string;
  /** 0 for the session header; else the unit's submitted sequence. */
  @PrimaryColumn(sequenceColumn({ name: 'unit_sequence' })) unitSequence!: number;
  @PrimaryColumn(countColumn({ name: 'entry_index' })) entryIndex!: number;
  @Column({ name: 'work_id', type: 'varchar', length: 64 }) workId!: string;
  @Column({ name: 'kind', type: 'varchar', length: 32 }) kind!: string;
  /** The entry as JSON text, exactly as served. */
  @Column({ name: 'body', type: 'text' }) body!: string;
}

@Entity({ name: SESSION_MESSAGE_TABLE })
@Index('orch_session_message_work', ['workId'])
export class SessionMessageRow {
  @PrimaryColumn({ name: 'session_id', type: 'varchar', length: 256 }) sessionId!: string;
  @PrimaryColumn(sequenceColumn({ name: 'unit_sequence' })) unitSequence!: number;
  @PrimaryColumn(countColumn({ name: 'message_index' })) messageIndex!: number;
  @Column({ name: 'work_id', type: 'varchar', length: 64 }) workId!: string;
  @Column({ name: 'role', type: 'varchar', length: 64 }) role!: string;
  @Column({ name: 'content', type: 'text' }) content!: string;
}

@Entity({ name: PROJECTION_WARNING_TABLE })
@Index('orch_projection_warning_work', ['workId'])
export class ProjectionWarningRow {
  /** The stream sequence of the event that could not be applied. */
  @PrimaryColumn(sequenceColumn({ name: 'sequence' })) sequence!: number;
  @Column({ name: 'work_id', type: 'varchar', length: 64 }) workId!: string;
  @Column({ name: 'event_type', type: 'varchar', length: 64 }) eventType!: string;
  @Column({ name: 'message', type: 'text' }) message!: string;
}

export const WORK_PROJECTION_ENTITIES = [WorkUnitRow, SessionEntryRow, SessionMessageRow, ProjectionWarningRow];
