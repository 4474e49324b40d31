// Creates the orchestrator's read model with TypeORM's portable Table API, so one
// migration serves SQLite and PostgreSQL.
import { Table, TableIndex, type MigrationInterface, type QueryRunner } from 'typeorm';
import {
  PROJECTION_WARNING_TABLE,
  SESSION_ENTRY_TABLE,
  SESSION_MESSAGE_TABLE,
  WORK_UNIT_TABLE,
} from '../work-projection.entities.js';

export class CreateOrchestratorProjections1767225601000 implements MigrationInterface {
  name = 'CreateOrchestratorProjections1767225601000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: WORK_UNIT_TABLE,
        columns: [
          { name: 'work_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'session_id', type: 'varchar', length: '256' },
          { name: 'status', type: 'varchar', length: '16' },
          { name: 'error', type: 'text', isNullable: true },
          { name: 'output', type: 'text', isNullable: true },
          { name: 'receipt', type: 'text', isNullable: true },
          { name: 'submitted_sequence', type: 'bigint' },
          { name: 'submitted_at', type: 'varchar', length: '40' },
          { name: 'last_sequence', type: 'bigint' },
          { name: 'state', type: 'text' },
        ],
      }),
    );
    await queryRunner.createIndex(
      WORK_UNIT_TABLE,
      new TableIndex({ name: 'orch_work_unit_session', columnNames: ['session_id', 'submitted_sequence'] }),
    );
    for (const [table, indexColumn, column] of [
      [SESSION_ENTRY_TABLE, 'entry_index', 'entry'],
      [SESSION_MESSAGE_TABLE, 'message_index', 'message'],
    ] as const) {
      const columns =
        column === 'entry'
          ? [
              { name: 'kind', type: 'varchar', length: '32' },
              { name: 'body', type: 'text' },
            ]
          : [
              { name: 'role', type: 'varchar', length: '64' },
              { name: 'content', type: 'text' },
            ];
      await queryRunner.createTable(
        new Table({
          name: table,
          columns: [
            { name: 'session_id', type: 'varchar', length: '256', isPrimary: true },
            { name: 'unit_sequence', type: 'bigint', isPrimary: true },
            { name: indexColumn, type: 'integer', isPrimary: true },
            { name: 'work_id', type: 'varchar', length: '64' },
            ...columns,
          ],
        }),
      );
      await queryRunner.createIndex(table, new TableIndex({ name: `${table}_work`, columnNames: ['work_id'] }));
    }
    await queryRunner.createTable(
      new Table({
        name: PROJECTION_WARNING_TABLE,
        columns: [
          { name: 'sequence', type: 'bigint', isPrimary: true },
          { name: 'work_id', type: 'varchar', length: '64' },
          { name: 'event_type', type: 'varchar', length: '64' },
          { name: 'message', type: 'text' },
        ],
      }),
    );
    await queryRunner.createIndex(
      PROJECTION_WARNING_TABLE,
      new TableIndex({ name: 'orch_projection_warning_work', columnNames: ['work_id'] }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of [PROJECTION_WARNING_TABLE, SESSION_MESSAGE_TABLE, SESSION_ENTRY_TABLE, WORK_UNIT_TABLE])
      await queryRunner.dropTable(table);
  }
}
