// Creates the budget projection tables with TypeORM's portable Table API, so one
// migration serves SQLite and PostgreSQL. Money and sequences are bigint everywhere.
import { Table, TableIndex, type MigrationInterface, type QueryRunner, type TableColumnOptions } from 'typeorm';
import { BUDGET_TABLES, CAPABILITY_ID_LENGTH, ID_LENGTH } from '../entities.js';

const id = (name: string, length = ID_LENGTH, nullable = false): TableColumnOptions => ({
  name,
  type: 'varchar',
  length: String(length),
  isNullable: nullable,
});
const cap = (name: string, nullable = false) => id(name, CAPABILITY_ID_LENGTH, nullable);
const big = (name: string, nullable = false): TableColumnOptions => ({ name, type: 'bigint', isNullable: nullable });
const int = (name: string): TableColumnOptions => ({ name, type: 'integer', isNullable: false });
const text = (name: string, nullable = false): TableColumnOptions => ({ name, type: 'text', isNullable: nullable });
const short = (name: string, length: number, nullable = false): TableColumnOptions => ({
  name,
  type: 'varchar',
  length: String(length),
  isNullable: nullable,
});
const primary = (column: TableColumnOptions): TableColumnOptions => ({ ...column, isPrimary: true });

export class CreateBudgetProjections1767225700000 implements MigrationInterface {
  name = 'CreateBudgetProjections1767225700000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: BUDGET_TABLES.capabilities,
        columns: [
          primary(cap('capability_id')),
          cap('root_id'),
          cap('parent_id', true),
          short('subject_public_key', 128),
          int('depth'),
          big('issued_at_ms'),
          big('expires_at_ms'),
          text('grants'),
          big('budget_units', true),
          big('revoked_at_ms', true),
          cap('revoked_via', true),
          big('issued_sequence'),
        ],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: BUDGET_TABLES.usage,
        columns: [
          primary(cap('capability_id')),
          primary(int('grant_index')),
          cap('root_id'),
          int('invocation_count'),
          big('exposed_cost_units'),
          big('realized_cost_units'),
          big('committed_cost_units'),
          short('currency', 16, true),
          big('last_sequence'),
        ],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: BUDGET_TABLES.holds,
        columns: [
          primary(id('hold_id')),
          cap('root_id'),
          id('request_id'),
          cap('capability_id'),
          int('grant_index'),
          text('chain'),
          big('exposure_units'),
          int('monetary'),
          int('preflight'),
          short('status', 16),
          big('expires_at_ms'),
          big('authorize_commit_index'),
          big('capture_commit_index', true),
          big('realized_units', true),
          big('last_sequence'),
        ],
        indices: [new TableIndex({ name: 'budget_holds_capability', columnNames: ['capability_id', 'grant_index'] })],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: BUDGET_TABLES.mutations,
        columns: [
          primary(id('event_id')),
          cap('root_id'),
          cap('capability_id'),
          int('grant_index'),
          short('kind', 64),
          id('hold_id'),
          id('request_id'),
          short('cause', 32, true),
          big('commit_index'),
          big('occurred_at_ms'),
          int('invocation_delta'),
          big('exposed_delta_units'),
          big('realized_delta_units'),
        ],
        indices: [
          new TableIndex({
            name: 'budget_mutations_grant',
            columnNames: ['capability_id', 'grant_index', 'commit_index'],
          }),
        ],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: BUDGET_TABLES.receipts,
        columns: [
          primary(id('receipt_id')),
          cap('root_id'),
          id('command_id'),
          id('request_id', ID_LENGTH, true),
          id('hold_id', ID_LENGTH, true),
          cap('capability_id', true),
          short('verdict', 8),
          text('body'),
          short('signature', 256),
          short('key_id', 64),
          short('signature_check', 16),
          text('decision', true),
          big('commit_index'),
        ],
        indices: [new TableIndex({ name: 'budget_receipts_request', columnNames: ['request_id'] })],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: BUDGET_TABLES.ambiguities,
        columns: [
          primary(id('ambiguity_id')),
          cap('root_id'),
          id('hold_id'),
          cap('capability_id'),
          short('kind', 32),
          id('event_id', ID_LENGTH, true),
          id('reference', ID_LENGTH, true),
          short('resolution', 64, true),
          short('rail_state', 32, true),
          big('recorded_sequence'),
          big('resolved_sequence', true),
        ],
        indices: [new TableIndex({ name: 'budget_ambiguities_hold', columnNames: ['hold_id'] })],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of Object.values(BUDGET_TABLES).reverse()) await queryRunner.dropTable(table);
  }
}
