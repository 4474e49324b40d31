// A small projection for the runner's tests: one row per aggregate with an event count,
// a money total (bigint, deliberately beyond 2^53) and the last sequence applied.
import { EventRegistry } from '@tally/contracts';
import type { StoredEvent } from '@tally/eventing';
import { IsInt, IsString, Min } from 'class-validator';
import {
  Entity,
  In,
  PrimaryColumn,
  Column,
  Table,
  type EntityManager,
  type MigrationInterface,
  type QueryRunner,
} from 'typeorm';
import { bulkUpsert, countColumn, moneyColumn, sequenceColumn, type Projection } from '../src/index.js';

export class AmountRecorded {
  /** Minor units, kept under 2^53 per event so it travels as a JSON number. */
  @IsInt() @Min(0) amountMinor!: number;
  @IsString() writer!: string;
}

export const counterRegistry = () =>
  new EventRegistry([{ type: 'AmountRecorded', version: 1, payload: AmountRecorded }]);

export const COUNTER_TABLE = 'test_counter';

@Entity({ name: COUNTER_TABLE })
export class TestCounter {
  @PrimaryColumn({ name: 'aggregate_id', type: 'varchar', length: 64 }) aggregateId!: string;
  @Column(moneyColumn({ name: 'total_minor' })) totalMinor!: bigint;
  @Column(countColumn()) events!: number;
  @Column(sequenceColumn({ name: 'last_sequence' })) lastSequence!: number;
}

export class CreateTestCounter1767225600100 implements MigrationInterface {
  name = 'CreateTestCounter1767225600100';
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: COUNTER_TABLE,
        columns: [
          { name: 'aggregate_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'total_minor', type: 'bigint', isNullable: false },
          { name: 'events', type: 'integer', isNullable: false },
          { name: 'last_sequence', type: 'bigint', isNullable: false },
        ],
      }),
    );
  }
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable(COUNTER_TABLE);
  }
}

export interface CounterHooks {
  /** Runs after the batch's rows are written, before the runner commits, inside its transaction. */
  afterWrite?(events: readonly StoredEvent[], manager: EntityManager): Promise<void>;
}

export function counterProjection(stream: string, filterSubject: string, hooks: CounterHooks = {}): Projection {
  return {
    name: 'test-counter',
    stream,
    filterSubject,
    tables: [COUNTER_TABLE],
    async apply(manager: EntityManager, events: readonly StoredEvent[]): Promise<void> {
      const ids = [...new Set(events.map((e) => e.event.aggregateId))];
      const rows = new Map(
        (await manager.findBy(TestCounter, { aggregateId: In(ids) })).map((row) => [row.aggregateId, row]),
      );
      for (const { sequence, event } of events) {
        const row = rows.get(event.aggregateId) ?? {
          aggregateId: event.aggregateId,
          totalMinor: 0n,
          events: 0,
          lastSequence: 0,
        };
        row.totalMinor += BigInt((event.payload as unknown as AmountRecorded).amountMinor);
        row.events += 1;
        row.lastSequence = sequence;
        rows.set(event.aggregateId, row);
      }
      await bulkUpsert(manager, TestCounter, [...rows.values()], {
        conflictColumns: ['aggregateId'],
        updateColumns: ['totalMinor', 'events', 'lastSequence'],
        rowsPerStatementMax: 500,
      });
      await hooks.afterWrite?.(events, manager);
    },
  };
}
