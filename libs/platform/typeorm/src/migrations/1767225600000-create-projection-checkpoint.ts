// Creates the checkpoint table. Written with TypeORM's portable Table API so that one
// migration serves SQLite and PostgreSQL; only the timestamp type differs.
import { Table, type MigrationInterface, type QueryRunner } from 'typeorm';
import { CHECKPOINT_TABLE } from '../checkpoint.entity.js';

export class CreateProjectionCheckpoint1767225600000 implements MigrationInterface {
  name = 'CreateProjectionCheckpoint1767225600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const postgres = queryRunner.connection.options.type === 'postgres';
    await queryRunner.createTable(
      new Table({
        name: CHECKPOINT_TABLE,
        columns: [
          { name: 'projection', type: 'varchar', length: '128', isPrimary: true },
          { name: 'stream', type: 'varchar', length: '128', isNullable: false },
          { name: 'sequence', type: 'bigint', isNullable: false },
          {
            name: 'updated_at',
            type: postgres ? 'timestamptz' : 'datetime',
            isNullable: false,
            default: 'CURRENT_TIMESTAMP',
          },
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable(CHECKPOINT_TABLE);
  }
}
