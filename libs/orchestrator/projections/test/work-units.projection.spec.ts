// Proves the work-unit projection on SQLite (and PostgreSQL with DATABASE_URL): rows are a
// pure function of the events whatever the batch boundaries, the log and messages follow
// O4's order, an event that breaks the fold becomes a warning row instead of a throw, and a
// unit applied late (a quarantine retried, ADR 0045) leaves the rows of stream order.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { StoredEvent } from '@tally/eventing';
import { resolveLimits, type WorkEvent } from '@tally/orchestrator-domain';
import {
  PROJECTION_WARNING_TABLE,
  SESSION_ENTRY_TABLE,
  SESSION_MESSAGE_TABLE,
  WORK_PROJECTION_ENTITIES,
  WORK_PROJECTION_MIGRATIONS,
  WORK_UNIT_TABLE,
  WorkProjectionReads,
  workUnitDeriver,
  workUnitsProjection,
  type WorkUnitDeriver,
} from '../src/index.js';
import { openDataSource, projectionDigest, qualifiedTable } from '@tally/platform-typeorm';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DataSource } from 'typeorm';

const TABLES = [WORK_UNIT_TABLE, SESSION_ENTRY_TABLE, SESSION_MESSAGE_TABLE, PROJECTION_WARNING_TABLE];
const projection = workUnitsProjection({
  stream: 'T_WORK_EVENTS',
  filterSubject: 't.work.evt.>',
  deriver: workUnitDeriver as WorkUnitDeriver<unknown>,
});
const dir = mkdtempSync(join(tmpdir(), 'tally-orch-proj-'));
const price = { input_per_mtok_units: 1_000_000, output_per_mtok_units: 2_000_000, currency: 'USD' };
let at = Date.parse('2026-01-01T00:00:00.000Z');
const t = () => new Date((at += 1_000)).toISOString();

function unitEvents(workId: string, sessionId: string, prompt: string, reply: string): WorkEvent[] {
  const base = { work_id: workId };
  return [
    {
      type: 'WorkSubmitted',
      ...base,
      session_id: sessionId,
      purpose: 'execute',
      token_fingerprint: 'fingerprint-of-tok',
      entrypoint: 'work',
      route: [{ provider: 'p', model: 'm' }],
      messages: [{ role: 'user', content: prompt }],
      limits: resolveLimits({}),
      at: t(),
    },
    {
      type: 'AttemptStarted',
      ...base,
      ordinal: 0,
      reason: 'initial',
      leg_index: 0,
      provider: 'p',
      model: 'm',
      round: 0,
      hold_id: `h-${workId}-0`,
      hold_cost_units: '100',
      price,
      backoff_ms: 0,
      at: t(),
    },
    {
      type: 'AttemptSettled',
      ...base,
      ordinal: 0,
      domain: 'network',
      settlement: 'unknown',
      latency_ms: 3,
      error: 'reset',
      at: t(),
    },
    { type: 'HoldSettled', ...base, ordinal: 0, hold_id: `h-${workId}-0`, outcome: 'failed_after_dispatch', at: t() },
    {
      type: 'AttemptStarted',
      ...base,
      ordinal: 1,
      reason: 'retry',
      leg_index: 0,
      provider: 'p',
      model: 'm',
      round: 0,
      hold_id: `h-${workId}-1`,
      hold_cost_units: '9007199254740993',
      price,
      backoff_ms: 1,
      at: t(),
    },
    {
      type: 'AttemptSettled',
      ...base,
      ordinal: 1,
      domain: 'unknown',
      settlement: 'ok',
      latency_ms: 5,
      usage: { input_tokens: 5, output_tokens: 3 },
      output: reply,
      at: t(),
    },
    {
      type: 'HoldSettled',
      ...base,
      ordinal: 1,
      hold_id: `h-${workId}-1`,
      outcome: 'completed',
      cost_units: '11',
      at: t(),
    },
    { type: 'WorkCompleted', ...base, winning_attempt: 1, output: reply, at: t() },
  ];
}

function stored(events: readonly WorkEvent[]): StoredEvent[] {
  return events.map((e, i) => {
    const { type, ...payload } = e;
    return {
      sequence: i + 1,
      subject: `t.work.evt.${e.work_id}`,
      event: {
        eventId: `e${i}`,
        type,
        schemaVersion: 1,
        aggregateId: e.work_id,
        occurredAt: e.at,
        payload: payload as Record<string, unknown>,
      },
    };
  });
}

// Two units of one session, interleaved, then a unit in another session, then two facts the fold refuses.
const a = unitEvents('unit-a', 'sess-1', 'first prompt', 'first reply');
const b = unitEvents('unit-b', 'sess-1', 'second prompt', 'second reply');
const c = unitEvents('unit-c', 'sess-2', 'other prompt', 'other reply');
const broken: WorkEvent[] = [
  { type: 'WorkCompleted', work_id: 'unit-a', winning_attempt: 1, output: 'again', at: t() },
  { type: 'AbortRequested', work_id: 'unit-ghost', reason: 'no such unit', at: t() },
];
const all = stored([...a.slice(0, 3), ...b.slice(0, 2), ...a.slice(3), ...b.slice(2), ...c, ...broken]);

const databases: { name: string; open: () => Promise<DataSource> }[] = [];
let n = 0;
const common = {
  entities: WORK_PROJECTION_ENTITIES,
  migrations: WORK_PROJECTION_MIGRATIONS,
  sqliteBusyTimeoutMs: 10_000,
  postgresPoolSize: 2,
  postgresConnectTimeoutMs: 5_000,
  postgresStatementTimeoutMs: 30_000,
};
databases.push({ name: 'sqlite', open: () => openDataSource({ ...common, sqlitePath: join(dir, `p${n++}.sqlite`) }) });
const pgUrl = process.env['DATABASE_URL'];
const schemas: string[] = [];
if (pgUrl) {
  databases.push({
    name: 'postgres',
    open: () => {
      const schema = `orch_proj_${process.pid}_${n++}`;
      schemas.push(schema);
      return openDataSource({ ...common, databaseUrl: pgUrl, schema });
    },
  });
}
const opened: DataSource[] = [];
afterAll(async () => {
  for (const ds of opened) {
    if (ds.options.type === 'postgres')
      await ds.query(`DROP SCHEMA IF EXISTS ${ds.driver.escape((ds.options as { schema: string }).schema)} CASCADE`);
    await ds.destroy();
  }
});

async function project(database: number, batchSize: number): Promise<DataSource> {
  const ds = await databases[database]!.open();
  opened.push(ds);
  for (let i = 0; i < all.length; i += batchSize)
    await ds.transaction((m) => projection.apply(m, all.slice(i, i + batchSize)));
  return ds;
}

describe.each(databases.map((d, i) => [d.name, i] as const))('work-unit projection on %s', (_name, index) => {
  let one: DataSource;
  beforeAll(async () => {
    one = await project(index, 1);
  }, 60_000);

  it('O4 rows are identical whatever the batch boundaries (one event, three, or all at once)', async () => {
    const digest = await projectionDigest(one, TABLES);
    expect(await projectionDigest(await project(index, 3), TABLES)).toBe(digest);
    expect(await projectionDigest(await project(index, all.length), TABLES)).toBe(digest);
  });

  it('O4 the session log reads header, then per unit prompt, receipt, reply, turn card; messages exclude receipts', async () => {
    const reads = new WorkProjectionReads(() => one.manager);
    const log = await reads.sessionLog('sess-1', 100);
    expect(log.map((e) => e.kind)).toEqual([
      'header',
      'message',
      'receipt',
      'message',
      'turn-card',
      'message',
      'receipt',
      'message',
      'turn-card',
    ]);
    expect(log[0]).toMatchObject({ kind: 'header', work_id: 'unit-a', session_id: 'sess-1' });
    expect(await reads.sessionMessages('sess-1', 100)).toEqual([
      { role: 'user', content: 'first prompt' },
      { role: 'assistant', content: 'first reply' },
      { role: 'user', content: 'second prompt' },
      { role: 'assistant', content: 'second reply' },
    ]);
    const unit = await reads.unit('unit-a');
    expect(unit).toMatchObject({ status: 'completed', output: 'first reply', session_id: 'sess-1' });
    const attempts = unit!.receipt!['attempts'] as Record<string, unknown>[];
    expect(attempts.map((x) => [x['reason'], x['domain'], x['settlement']])).toEqual([
      ['initial', 'network', 'unknown'],
      ['retry', 'unknown', 'ok'],
    ]);
    expect(attempts[1]!['usage']).toEqual({ input_tokens: 5, output_tokens: 3, cost_units: 11 });
  });

  it('an event the fold refuses becomes a warning row naming it; the projection does not throw and keeps the unit as it was', async () => {
    const reads = new WorkProjectionReads(() => one.manager);
    const warnings = await reads.allWarnings(10);
    expect(warnings.map((w) => [w.work_id, w.event_type])).toEqual([
      ['unit-a', 'WorkCompleted'],
      ['unit-ghost', 'AbortRequested'],
    ]);
    expect(warnings[0]!.message).toContain('after the unit ended completed');
    expect((await reads.unit('unit-a'))!.output).toBe('first reply');
    expect(await reads.unit('unit-ghost')).toBeUndefined();
    expect(await reads.sessionWarnings('sess-2')).toEqual([]);
  });

  it('ADR 0045 a unit applied after the later units of its session (quarantined, then retried) leaves the rows of stream order: its header opens the session', async () => {
    const ds = await databases[index]!.open();
    opened.push(ds);
    const isA = (e: StoredEvent) => e.event.aggregateId === 'unit-a';
    for (const batch of [all.filter((e) => !isA(e)), all.filter(isA)])
      await ds.transaction((m) => projection.apply(m, batch));
    expect(await projectionDigest(ds, TABLES)).toBe(await projectionDigest(one, TABLES));
    expect((await new WorkProjectionReads(() => ds.manager).sessionLog('sess-1', 1))[0]).toMatchObject({
      kind: 'header',
      work_id: 'unit-a',
    });
  });

  it('the serialized fold state keeps money above 2^53 exact', async () => {
    const rows = (await one.query(
      `SELECT state FROM ${qualifiedTable(one, WORK_UNIT_TABLE)} WHERE work_id = 'unit-b'`,
    )) as { state: string }[];
    const state = workUnitDeriver.load(rows[0]!.state);
    expect(state.attempts[1]!.hold_cost_units).toBe(9007199254740993n);
  });
});
