// Proves issue 12 item 2's projection re-check on a real SQLite database: chained receipts are recorded `linked`
// across batches from the issue event on, an edited or missing link is recorded `broken` once (never thrown), and
// receipts from before the chain are `unchained`.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueEventHash, receiptHash } from '@tally/contracts';
import type { StoredEvent } from '@tally/eventing';
import { openDataSource } from '@tally/platform-typeorm';
import type { DataSource } from 'typeorm';
import {
  BUDGET_ENTITIES,
  BUDGET_MIGRATIONS,
  budgetLedgerProjection,
  ReceiptChainRow,
  ReceiptRow,
} from '../src/index.js';

const ROOT = 'root1';
let sequence = 0;

function stored(type: string, eventId: string, payload: Record<string, unknown>): StoredEvent {
  return {
    sequence: ++sequence,
    subject: `t.budget.evt.${ROOT}`,
    position: 0,
    event: { eventId, type, schemaVersion: 1, aggregateId: ROOT, occurredAt: '2026-03-01T00:00:00.000Z', payload },
  };
}

const issued = stored('CapabilityIssued', 'cap:root1:issued', {
  capability_id: ROOT,
  root_id: ROOT,
  subject_public_key: 'pk',
  issued_at_ms: 1,
  expires_at_ms: 2,
  grants: [{ server_id: 's', tool_name: 't', max_cost_per_invocation: 10 }],
  depth: 0,
});

function receipt(
  n: number,
  chain?: { index: number; prev: string },
): { event: StoredEvent; signed: Record<string, unknown> } {
  const body = {
    id: `receipt:${ROOT}:cmd-${n}`,
    capability_id: ROOT,
    verdict: 'allow',
    ...(chain ? { chain_index: chain.index, prev_hash: chain.prev } : {}),
  };
  const data = {
    receipt_id: body.id,
    command_id: `cmd-${n}`,
    receipt: body,
    signature: `sig-${n}`,
    key_id: 'k',
    at_ms: 1000 + n,
  };
  return {
    event: stored('ReceiptRecorded', `${body.id}:recorded`, data),
    signed: { ...body, signature: data.signature },
  };
}

describe('budget ledger projection: receipt chain re-check (issue 12 item 2)', () => {
  let dataSource: DataSource | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'tally-chain-'));
  afterEach(async () => {
    await dataSource?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('item 2 links across batches from the issue event; an edited link is broken once and the chain goes on; unchained stays unchained', async () => {
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
    const anchor = issueEventHash({ event_id: issued.event.eventId, data: issued.event.payload });
    const old = receipt(0);
    const r1 = receipt(1, { index: 0, prev: anchor });
    const r2 = receipt(2, { index: 1, prev: receiptHash(r1.signed) });
    const r3 = receipt(3, { index: 2, prev: 'edited' });
    const r4 = receipt(4, { index: 3, prev: receiptHash(r3.signed) });
    const r5 = receipt(5, { index: 5, prev: receiptHash(r4.signed) });
    await apply([issued, old.event, r1.event]);
    await apply([r2.event, r3.event]);
    await apply([r4.event, r5.event]);
    const rows = await dataSource.manager.find(ReceiptRow, { order: { commitIndex: 'ASC' } });
    expect(rows.map((r) => [r.commandId, r.chainIndex, r.chainCheck])).toEqual([
      ['cmd-0', null, 'unchained'],
      ['cmd-1', 0, 'linked'],
      ['cmd-2', 1, 'linked'],
      ['cmd-3', 2, 'broken'],
      ['cmd-4', 3, 'linked'],
      ['cmd-5', 5, 'broken'],
    ]);
    expect(rows.map((r) => r.recordedAtMs)).toEqual([1000, 1001, 1002, 1003, 1004, 1005]);
    expect(await dataSource.manager.findOneBy(ReceiptChainRow, { chainKey: ROOT })).toMatchObject({
      nextIndex: 6,
      lastHash: receiptHash(r5.signed),
    });
  });
});
