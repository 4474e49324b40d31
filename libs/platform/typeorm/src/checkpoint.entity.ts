// One row per projection: the last stream sequence whose effects are committed in the
// projection's tables. It is written in the same transaction as those rows, which is
// what makes a redelivered event a no-op.
import { Column, Entity, PrimaryColumn } from 'typeorm';
import { sequenceColumn } from './integer-columns.js';

export const CHECKPOINT_TABLE = 'tally_projection_checkpoint';

@Entity({ name: CHECKPOINT_TABLE })
export class ProjectionCheckpoint {
  @PrimaryColumn({ type: 'varchar', length: 128 }) projection!: string;
  @Column({ type: 'varchar', length: 128 }) stream!: string;
  @Column(sequenceColumn()) sequence!: number;
  // updated_at is maintained in SQL (CURRENT_TIMESTAMP) and not mapped here: its natural
  // type differs (timestamptz on PostgreSQL, datetime on SQLite) and no code reads it back.
}
