// Creates the quarantine table (ADR 0045), with the portable Table API like the checkpoint
// table, so one migration serves SQLite and PostgreSQL.
import { Table, type MigrationInterface, type QueryRunner } from 'typeorm';
import { QUARANTINE_REASON_LENGTH, QUARANTINE_TABLE } from '../quarantine.entity.js';

export class CreateProjectionQuarantine1767226545000 implements MigrationInterface {
  name = 'CreateProjectionQuarantine1767226545000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const bigint = (name: string) => ({ name, type: 'bigint', isNullable: false });
    await queryRunner.createTable(
      new Table({
        name: QUARANTINE_TABLE,
        columns: [
          { name: 'projection', type: 'varchar', length: '128', isPrimary: true },
          { name: 'subject', type: 'varchar', length: '255', isPrimary: true },
          { name: 'aggregate_id', type: 'varchar', length: '255', isNullable: false },
          bigint('sequence'),
          { name: 'event_type', type: 'varchar', length: '128', isNullable: false },
          { name: 'reason', type: 'varchar', length: String(QUARANTINE_REASON_LENGTH), isNullable: false },
          bigint('first_seen_at_ms'),
          bigint('skipped_events'),
          bigint('last_sequence'),
          bigint('resume_sequence'),
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable(QUARANTINE_TABLE);
  }
}
