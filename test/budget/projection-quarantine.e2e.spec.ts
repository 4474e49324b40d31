// Proves ADR 0045 on a running budget-authority (real NATS, SQLite or PostgreSQL): two events
// written raw to two trees' subjects, one with an amount past what the database column holds
// and one a database constraint refuses, quarantine only their trees. Their reads answer 503
// naming the quarantine, another tenant's tree used after them reads current, the metric,
// /readyz and `tally projections status` show both, a restart after the constraint is lifted
// retries that tree (it leaves quarantine, its new rows appear), and `tally projections retry`
// with the service stopped keeps the tree still broken quarantined.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { budgetEventRegistry } from '@tally/budget-application';
import Database from 'better-sqlite3';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { sharedNatsUrl } from '@tally/testing';
import pg from 'pg';
import { runTally } from '../cli/support/run-cli.js';
import {
  admitPayload,
  AuthorityStack,
  eventually,
  monetaryGrant,
  newSubjectKey,
  type Json,
} from './support/authority-stack.js';

/** Text in the raw events that must never reach a 503, a log line the test reads, or the CLI. */
const MARKER = 'quarantine-marker-4e1c';
const CAPABILITIES_TABLE = 'budget_capabilities';

let stack: AuthorityStack;
beforeAll(async () => {
  stack = await AuthorityStack.create('bquar');
  await stack.start();
}, 180_000);
afterAll(async () => stack?.dispose(), 60_000);

let overflowTree: Json;
let refusedTree: Json;
let overflowSequence: number;
let refusedSequence: number;
let otherReader: string;
let refusedChild: string;

describe('ADR 0045: one event that cannot be projected stops only its own budget tree', () => {
  beforeAll(async () => {
    for (const tenant of ['acme', 'globex'])
      expect((await stack.http('POST', '/v1/tenants', { id: tenant })).status).toBe(201);
    otherReader = (await stack.ok('POST', '/v1/tenants/globex/keys', { role: 'reader' }))['key'] as string;
    overflowTree = await stack.issue([monetaryGrant()], { tenant_id: 'acme' });
    refusedTree = await stack.issue([monetaryGrant()], { tenant_id: 'acme' });
    await spend(overflowTree, 'before-overflow', 30);
    refusedChild = `${refusedTree['id']}--refused`;
    await refuseCapabilityRow(refusedChild);
    overflowSequence = await publishRaw(
      issuedEvent(overflowTree, `${overflowTree['id']}--overflow`, '9223372036854775808'),
    );
    refusedSequence = await publishRaw(issuedEvent(refusedTree, refusedChild, 10));
  }, 120_000);

  it('ADR 0045 a read of a quarantined tree answers 503 problem+json naming the projection, the sequence and the event type, on every read path of it', async () => {
    const root = overflowTree['id'] as string;
    const usage = await eventually(
      () => stack.http('GET', `/v1/capabilities/${root}/usage`),
      (r) => r.status === 503,
      60_000,
      'the overflowing tree to be quarantined',
    );
    expect(usage.headers.get('content-type')).toContain('application/problem+json');
    expect(usage.body).toMatchObject({ type: 'projection_quarantined', status: 503 });
    expect(usage.body['detail']).toContain('budget-ledger');
    expect(usage.body['detail']).toContain(`event ${overflowSequence} (CapabilityIssued)`);
    expect(JSON.stringify(usage.body)).not.toContain(MARKER);
    for (const path of [
      `/v1/capabilities/${root}`,
      `/v1/capabilities/${root}/events`,
      `/v1/capabilities/${root}/holds`,
      `/v1/receipts?capability_id=${root}`,
      `/v1/receipts/${encodeURIComponent(`receipt:${root}:x`)}`,
    ])
      expect({ path, status: (await stack.http('GET', path)).status }).toEqual({ path, status: 503 });
    // Another tenant asking for it learns nothing: the 404 of an unknown capability, as before.
    const foreign = await stack.http('GET', `/v1/capabilities/${root}/usage`, undefined, {
      authorization: `Bearer ${otherReader}`,
    });
    expect(foreign.status).toBe(404);
  });

  it('ADR 0045 a capability of another tenant issued and used after the bad events is readable and its usage is current', async () => {
    const other = await stack.issue([monetaryGrant()], { tenant_id: 'globex' });
    await spend(other, 'after-quarantine', 40);
    const usage = await eventually(
      () => stack.usage(other['id'] as string),
      (u) => u['invocation_count'] === 1 && u['committed_cost_units'] === 40,
      30_000,
      'the usage of the other tenant',
    );
    expect(usage['realized_cost_units']).toBe(40);
    expect((await stack.events(other['id'] as string)).length).toBeGreaterThan(0);
  });

  it('ADR 0045 the metric, /readyz and `tally projections status` show each quarantined tree with its reason and never its content', async () => {
    const metrics = await (await fetch(`${stack.metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(/^tally_projection_quarantined_aggregates\{projection="budget-ledger"\} 2$/m);
    expect(metrics).toMatch(/^tally_projection_quarantined_events\{projection="budget-ledger"\} 2$/m);
    const ready = (await (await fetch(`${stack.metricsUrl}/readyz`)).json()) as Json;
    expect(ready['status']).toBe('degraded');
    expect(ready['degraded']).toContain(
      'projection budget-ledger has 2 quarantined aggregate(s): tally projections status',
    );

    const status = await runTally(
      ['projections', 'status', '--service', 'budget-authority', '--json'],
      stack.env,
      120_000,
    );
    expect(status.code).toBe(1);
    const [ledger] = JSON.parse(status.stdout)['projections'] as Json[];
    expect(ledger).toMatchObject({ projection: 'budget-ledger', service: 'budget-authority', lag_events: 0 });
    const rows = ledger!['quarantined'] as Json[];
    expect(rows.map((r) => [r['aggregate_id'], r['sequence'], r['event_type']]).sort()).toEqual(
      [
        [overflowTree['id'], overflowSequence, 'CapabilityIssued'],
        [refusedTree['id'], refusedSequence, 'CapabilityIssued'],
      ].sort(),
    );
    for (const row of rows) expect(row['reason'].length).toBeGreaterThan(5);
    expect(status.stdout).not.toContain(MARKER);
    const text = await runTally(['projections', 'status', '--service', 'budget-authority'], stack.env, 120_000);
    expect(text.stdout).toContain('Quarantined aggregates');
    expect(text.stdout).toContain(refusedTree['id']);
  }, 240_000);

  it('ADR 0045 a restart after the cause is fixed retries the tree: it leaves quarantine, its rows appear, and the tree still broken stays quarantined', async () => {
    await allowCapabilityRows();
    await stack.processes[0]!.stop();
    await stack.start();
    const child = await eventually(
      () => stack.http('GET', `/v1/capabilities/${refusedChild}`),
      (r) => r.status === 200,
      60_000,
      'the retried tree to read again',
    );
    expect(child.body).toMatchObject({ id: refusedChild, parent_id: refusedTree['id'] });
    expect((await stack.http('GET', `/v1/capabilities/${refusedTree['id']}/usage`)).status).toBe(200);
    expect((await stack.http('GET', `/v1/capabilities/${overflowTree['id']}/usage`)).status).toBe(503);
    const metrics = await eventually(
      async () => (await fetch(`${stack.metricsUrl}/metrics`)).text(),
      (text) => /^tally_projection_quarantined_aggregates\{projection="budget-ledger"\} 1$/m.test(text),
      30_000,
      'one quarantined tree in the metric',
    );
    expect(metrics).toContain('tally_projection_quarantined_aggregates');
  }, 240_000);

  it('ADR 0045 tally projections retry refuses while a service holds the projector lease, and with it stopped retries with this release: the tree still broken stays quarantined (exit 1)', async () => {
    const held = await runTally(['projections', 'retry', '--service', 'budget-authority'], stack.env, 120_000);
    expect(held.code).toBe(1);
    expect(held.stderr).toContain('holds the projector lease');
    await stack.processes.at(-1)!.stop();
    const retried = await eventually(
      () => runTally(['projections', 'retry', '--service', 'budget-authority', '--json'], stack.env, 120_000),
      // The stopped replica's lease lives on for its TTL; until then the command refuses.
      (run) => !run.stderr.includes('holds the projector lease'),
      60_000,
      'the projector lease to be free',
    );
    expect(retried.code).toBe(1);
    expect(JSON.parse(retried.stdout)['retried']).toEqual([
      {
        projection: 'budget-ledger',
        subject: stack.names.budgetEventSubject(overflowTree['id'] as string),
        aggregateId: overflowTree['id'],
        result: 'quarantined',
        applied: 0,
      },
    ]);
  }, 240_000);
});

/** One admitted and settled invocation of `cost`. */
async function spend(capability: Json, label: string, cost: number): Promise<void> {
  const admitted = await stack.admit(admitPayload(capability['token'], `${label}-${capability['id']}`, 'standalone'));
  expect(admitted['verdict']).toBe('allow');
  const settled = await stack.settle({
    hold_id: admitted['hold_id'],
    outcome: { kind: 'completed', cost_units: cost, currency: 'USD' },
  });
  expect(settled['receipt']['verdict']).toBe('allow');
}

/** A delegation of `root` as the authority records it, with a budget the test chooses. */
function issuedEvent(root: Json, childId: string, budgetUnits: number | string): { subject: string; data: string } {
  const now = Date.now();
  const rootId = root['id'] as string;
  const encoded = budgetEventRegistry().encode({
    eventId: `${childId}:issue`,
    type: 'CapabilityIssued',
    aggregateId: rootId,
    occurredAt: new Date(now).toISOString(),
    payload: {
      capability_id: childId,
      root_id: rootId,
      parent_id: rootId,
      tenant_id: 'acme',
      subject_public_key: `${newSubjectKey()}`,
      issued_at_ms: now,
      expires_at_ms: now + 3_600_000,
      grants: [{ server_id: 'cost-srv', tool_name: MARKER, parent_grant_index: 0 }],
      budget_units: 1,
      depth: 1,
    },
  });
  // The amount is set after encoding, as a writer without the boundary's bound would store it.
  const envelope = JSON.parse(Buffer.from(encoded).toString('utf8')) as Json;
  envelope['payload']['budget_units'] = budgetUnits;
  return { subject: stack.names.budgetEventSubject(rootId), data: JSON.stringify(envelope) };
}

async function publishRaw(event: { subject: string; data: string }): Promise<number> {
  const nc = await connect({ servers: sharedNatsUrl() });
  try {
    return (await jetstream(nc).publish(event.subject, event.data, { timeout: 10_000 })).seq;
  } finally {
    await nc.close();
  }
}

/** A constraint of the test's: the database refuses the row of one capability. */
async function refuseCapabilityRow(capabilityId: string): Promise<void> {
  await onDatabase(
    [
      `CREATE TRIGGER test_refuse_capability BEFORE INSERT ON ${CAPABILITIES_TABLE}
       WHEN NEW.capability_id = '${capabilityId}' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`,
    ],
    [
      `CREATE FUNCTION test_refuse_capability() RETURNS trigger AS $$ BEGIN
         IF NEW.capability_id = '${capabilityId}' THEN RAISE EXCEPTION 'refused by the test'; END IF;
         RETURN NEW; END $$ LANGUAGE plpgsql`,
      `CREATE TRIGGER test_refuse_capability BEFORE INSERT ON ${CAPABILITIES_TABLE}
       FOR EACH ROW EXECUTE FUNCTION test_refuse_capability()`,
    ],
  );
}

async function allowCapabilityRows(): Promise<void> {
  await onDatabase(
    ['DROP TRIGGER test_refuse_capability'],
    [`DROP TRIGGER test_refuse_capability ON ${CAPABILITIES_TABLE}`, 'DROP FUNCTION test_refuse_capability()'],
  );
}

async function onDatabase(sqlite: readonly string[], postgres: readonly string[]): Promise<void> {
  const url = stack.env['DATABASE_URL'];
  if (!url) {
    const db = new Database(stack.env['TALLY_SQLITE_PATH']!, { timeout: 10_000 });
    try {
      for (const sql of sqlite) db.exec(sql);
    } finally {
      db.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const sql of postgres) await client.query(sql);
  } finally {
    await client.end();
  }
}
