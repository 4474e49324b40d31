// Adds who may read a work unit to its row: the tenant and the submitting token's
// fingerprint, so reads put the tenant scope into the query itself. Rows from before are
// the default tenant's; a replay fills in the fingerprints of every unit. Plain ALTER
// TABLE ADD COLUMN works the same on SQLite and PostgreSQL (TypeORM's SQLite addColumn
// rebuilds the table and loses the other columns' nullability).
import { type MigrationInterface, type QueryRunner } from 'typeorm';
import { qualifiedTable } from '@tally/platform-typeorm';
import { WORK_UNIT_TABLE } from '../work-projection.entities.js';

export class AddWorkUnitOwner1767226000000 implements MigrationInterface {
  name = 'AddWorkUnitOwner1767226000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const table = qualifiedTable(queryRunner.connection, WORK_UNIT_TABLE);
    await queryRunner.query(`ALTER TABLE ${table} ADD COLUMN tenant_id varchar(64) NOT NULL DEFAULT 'default'`);
    await queryRunner.query(`ALTER TABLE ${table} ADD COLUMN token_fingerprint varchar(128) NOT NULL DEFAULT ''`);
    await queryRunner.query(`CREATE INDEX orch_work_unit_tenant ON ${table} (tenant_id, submitted_sequence)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const table = qualifiedTable(queryRunner.connection, WORK_UNIT_TABLE);
    const index =
      queryRunner.connection.options.type === 'postgres'
        ? qualifiedTable(queryRunner.connection, 'orch_work_unit_tenant')
        : 'orch_work_unit_tenant';
    await queryRunner.query(`DROP INDEX ${index}`);
    await queryRunner.query(`ALTER TABLE ${table} DROP COLUMN token_fingerprint`);
    await queryRunner.query(`ALTER TABLE ${table} DROP COLUMN tenant_id`);
  }
}
