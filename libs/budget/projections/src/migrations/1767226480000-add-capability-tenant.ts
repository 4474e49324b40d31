// Capabilities belong to a tenant (http-api.md, Credentials): the column every tenant-scoped
// read of capabilities, holds, receipts and usage joins on. Rows from before tenants belong
// to `default`, as their CapabilityIssued events (which carry no tenant) do on a replay.
// Plain ALTER TABLE ADD COLUMN, as in 1767225800000, works the same on SQLite and PostgreSQL.
import { type MigrationInterface, type QueryRunner } from 'typeorm';
import { qualifiedTable } from '@tally/platform-typeorm';
import { BUDGET_TABLES } from '../entities.js';

const INDEX = 'budget_capabilities_tenant';

export class AddCapabilityTenant1767226480000 implements MigrationInterface {
  name = 'AddCapabilityTenant1767226480000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const table = qualifiedTable(queryRunner.connection, BUDGET_TABLES.capabilities);
    await queryRunner.query(`ALTER TABLE ${table} ADD COLUMN tenant_id varchar(64) NOT NULL DEFAULT 'default'`);
    await queryRunner.query(`CREATE INDEX ${INDEX} ON ${table} (tenant_id, capability_id)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const table = qualifiedTable(queryRunner.connection, BUDGET_TABLES.capabilities);
    const postgres = queryRunner.connection.options.type === 'postgres';
    await queryRunner.query(`DROP INDEX ${postgres ? qualifiedTable(queryRunner.connection, INDEX) : INDEX}`);
    await queryRunner.query(`ALTER TABLE ${table} DROP COLUMN tenant_id`);
  }
}
