// Proves ADR 0043 in the budget projection on a real SQLite database migrated to this release: a settlement from an
// earlier release (realized = min(charge, room), no hold_overrun_units) projects the usage it always did with no
// overrun, and one of this release counts its charge beyond the hold as overrun_cost_units on its whole chain.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoredEvent } from '@tally/eventing';
import { openDataSource } from '@tally/platform-typeorm';
import type { DataSource } from 'typeorm';
import { BUDGET_ENTITIES, BUDGET_MIGRATIONS, budgetLedgerProjection, UsageRow } from '../src/index.js';

const ROOT = 'root1';
const CHILD = 'root1--child';
let sequence = 0;

function stored(type: string, eventId: string, payload: Record<string, unknown>): StoredEvent {
  return {
    sequence: ++sequence,
    subject: `t.budget.evt.${ROOT}`,
    position: 0,
    event: { eventId, type, schemaVersion: 1, aggregateId: ROOT, occurredAt: '2026-03-01T00:00:00.000Z', payload },
  };
}

const grant = { server_id: 's', tool_name: 't', max_cost_per_invocation: 100, max_total_cost_units: 1000 };
const issued = (id: string, extra: Record<string, unknown>) =>
  stored('CapabilityIssued', `capability:${id}:issued`, {
    capability_id: id,
    root_id: ROOT,
    subject_public_key: 'pk',
    issued_at_ms: 1,
    expires_at_ms: 2,
    depth: 0,
    ...extra,
  });

/** A hold on the child's grant (chained to the root's), authorized and captured, then settled as `settled` says. */
function settledHold(req: string, settled: Record<string, unknown>): StoredEvent[] {
  const hold = `budget-hold:${req}:${CHILD}:0`;
  return [
    stored('HoldAuthorized', `${hold}:authorize`, {
      kind: 'authorize_exposure',
      hold_id: hold,
      request_id: req,
      capability_id: CHILD,
      grant_index: 0,
      chain: [
        { capability_id: CHILD, grant_index: 0 },
        { capability_id: ROOT, grant_index: 0 },
      ],
      exposure_units: 100,
      currency: 'USD',
      monetary: true,
      preflight: false,
      expires_at_ms: 10,
      at_ms: 3,
    }),
    stored('InvocationCaptured', `${hold}:capture-invocation:${sequence}`, {
      kind: 'capture_invocation',
      hold_id: hold,
      authorize_commit_index: sequence,
      at_ms: 4,
    }),
    stored('SpendSettled', `${hold}:settle`, { kind: 'capture_spend', hold_id: hold, at_ms: 5, ...settled }),
  ];
}

describe('budget ledger projection: overruns (ADR 0043)', () => {
  let dataSource: DataSource | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'tally-overrun-'));
  afterEach(async () => {
    await dataSource?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('B19 a settlement from an earlier release projects as it always did with no overrun; one of this release counts its overrun on the whole chain', async () => {
    dataSource = await openDataSource({
      sqlitePath: join(dir, 'p.sqlite'),
      entities: BUDGET_ENTITIES,
      migrations: BUDGET_MIGRATIONS,
      sqliteBusyTimeoutMs: 5_000,
      postgresPoolSize: 1,
      postgresConnectTimeoutMs: 5_000,
      postgresStatementTimeoutMs: 5_000,
    });
    const projection = budgetLedgerProjection({ stream: 'S', filterSubject: 't.budget.evt.>' });
    const apply = (events: StoredEvent[]) => dataSource!.transaction((m) => projection.apply(m, events));
    const usage = async () =>
      (await dataSource!.manager.find(UsageRow, { order: { capabilityId: 'ASC' } })).map((u) => [
        u.capabilityId,
        u.realizedCostUnits,
        u.committedCostUnits,
        u.overrunCostUnits,
      ]);
    await apply([
      issued(ROOT, { grants: [{ ...grant, currency: 'USD' }] }),
      issued(CHILD, { parent_id: ROOT, depth: 1, grants: [{ ...grant, currency: 'USD', parent_grant_index: 0 }] }),
    ]);
    // Before ADR 0043 the limits' room capped what was booked, and the rest was kept in overrun_units.
    await apply(settledHold('legacy', { actual_units: 5000, realized_units: 1000, overrun_units: 4000 }));
    expect(await usage()).toEqual([
      [ROOT, 1000n, 1000n, 0n],
      [CHILD, 1000n, 1000n, 0n],
    ]);
    await apply(
      settledHold('now', { actual_units: 306, realized_units: 306, overrun_units: 0, hold_overrun_units: 206 }),
    );
    expect(await usage()).toEqual([
      [ROOT, 1306n, 1306n, 206n],
      [CHILD, 1306n, 1306n, 206n],
    ]);
  });
});
