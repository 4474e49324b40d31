// Receipts carry their hash chain (ADR 0030): each row keeps its place in its commit (the
// chain's order when a group commit holds several), its chain index and the projection's
// check of it, and when it was recorded (exports `--since`); a table keeps where each chain
// stands. Rows from before are `unchained`; `tally replay` fills their position and time.
// Plain ALTER TABLE ADD COLUMN, as in 1767225800000, works the same on SQLite and PostgreSQL.
import { Table, type MigrationInterface, type QueryRunner } from 'typeorm';
import { qualifiedTable } from '@tally/platform-typeorm';
import { BUDGET_TABLES, CAPABILITY_ID_LENGTH, CHAIN_KEY_LENGTH } from '../entities.js';

const INDEXES = ['budget_receipts_order', 'budget_receipts_capability_order'];

export class AddReceiptChains1767226200000 implements MigrationInterface {
  name = 'AddReceiptChains1767226200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const table = qualifiedTable(queryRunner.connection, BUDGET_TABLES.receipts);
    await queryRunner.query(`ALTER TABLE ${table} ADD COLUMN commit_position integer NOT NULL DEFAULT 0`);
    await queryRunner.query(`ALTER TABLE ${table} ADD COLUMN chain_index integer`);
    await queryRunner.query(`ALTER TABLE ${table} ADD COLUMN chain_check varchar(16) NOT NULL DEFAULT 'unchained'`);
    await queryRunner.query(`ALTER TABLE ${table} ADD COLUMN recorded_at_ms bigint`);
    await queryRunner.query(`CREATE INDEX budget_receipts_order ON ${table} (commit_index, commit_position)`);
    await queryRunner.query(
      `CREATE INDEX budget_receipts_capability_order ON ${table} (capability_id, commit_index, commit_position)`,
    );
    await queryRunner.createTable(
      new Table({
        name: BUDGET_TABLES.receiptChains,
        columns: [
          { name: 'chain_key', type: 'varchar', length: String(CHAIN_KEY_LENGTH), isPrimary: true },
          { name: 'root_id', type: 'varchar', length: String(CAPABILITY_ID_LENGTH), isNullable: false },
          { name: 'next_index', type: 'integer', isNullable: false },
          { name: 'last_hash', type: 'varchar', length: '64', isNullable: false },
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable(BUDGET_TABLES.receiptChains);
    const table = qualifiedTable(queryRunner.connection, BUDGET_TABLES.receipts);
    const postgres = queryRunner.connection.options.type === 'postgres';
    for (const index of INDEXES)
      await queryRunner.query(`DROP INDEX ${postgres ? qualifiedTable(queryRunner.connection, index) : index}`);
    for (const column of ['recorded_at_ms', 'chain_check', 'chain_index', 'commit_position'])
      await queryRunner.query(`ALTER TABLE ${table} DROP COLUMN ${column}`);
  }
}
