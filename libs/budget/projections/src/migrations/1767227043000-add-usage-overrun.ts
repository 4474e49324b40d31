// Overruns are booked in full (ADR 0043): each usage row counts what providers billed beyond
// their holds. Rows from before it get 0, which is what a replay of their events gives too:
// those settlements booked within the limits and recorded no charge beyond the hold as spend.
// Plain ALTER TABLE ADD COLUMN, as in 1767225800000, works the same on SQLite and PostgreSQL.
import { type MigrationInterface, type QueryRunner } from 'typeorm';
import { qualifiedTable } from '@tally/platform-typeorm';
import { BUDGET_TABLES } from '../entities.js';

export class AddUsageOverrun1767227043000 implements MigrationInterface {
  name = 'AddUsageOverrun1767227043000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const table = qualifiedTable(queryRunner.connection, BUDGET_TABLES.usage);
    await queryRunner.query(`ALTER TABLE ${table} ADD COLUMN overrun_cost_units bigint NOT NULL DEFAULT 0`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const table = qualifiedTable(queryRunner.connection, BUDGET_TABLES.usage);
    await queryRunner.query(`ALTER TABLE ${table} DROP COLUMN overrun_cost_units`);
  }
}
