// Since one append is one commit that may hold several events (ADR 0002), mutations of
// one commit share a commit index; their position within the commit orders them, so
// "newest first" (B18) is exact rather than a tie. Plain ALTER TABLE ADD COLUMN works
// the same on SQLite and PostgreSQL; TypeORM's SQLite addColumn rebuilds the table and
// loses column nullability on the way.
import { type MigrationInterface, type QueryRunner } from 'typeorm';
import { qualifiedTable } from '@tally/platform-typeorm';
import { BUDGET_TABLES } from '../entities.js';

export class AddMutationCommitPosition1767225800000 implements MigrationInterface {
  name = 'AddMutationCommitPosition1767225800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const table = qualifiedTable(queryRunner.connection, BUDGET_TABLES.mutations);
    await queryRunner.query(`ALTER TABLE ${table} ADD COLUMN commit_position integer NOT NULL DEFAULT 0`);
    await queryRunner.query(
      `CREATE INDEX budget_mutations_order ON ${table} (capability_id, commit_index, commit_position)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const table = qualifiedTable(queryRunner.connection, BUDGET_TABLES.mutations);
    const index =
      queryRunner.connection.options.type === 'postgres'
        ? qualifiedTable(queryRunner.connection, 'budget_mutations_order')
        : 'budget_mutations_order';
    await queryRunner.query(`DROP INDEX ${index}`);
    await queryRunner.query(`ALTER TABLE ${table} DROP COLUMN commit_position`);
  }
}
