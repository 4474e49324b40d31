// Proves issue 9 item 8: `tally backup` of a running installation, then a disaster (the NATS
// server is killed and its whole store deleted), then `tally restore` onto the empty server and
// `tally replay` of both services into new databases gives the same projection digests and the
// same signed receipts, and the restored ledger keeps working: new metered work appends onto the
// restored subject chains.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { budgetProjectionSet } from '@tally/budget-projections';
import { tallyNames } from '@tally/contracts';
import { orchestratorProjectionSet } from '@tally/orchestrator-projections';
import type { ProjectionSet } from '@tally/platform-app';
import { openDataSource, projectionDigest } from '@tally/platform-typeorm';
import { PrivateNatsServer } from '@tally/testing';
import { OrchestratorHarness, workBody, type TestDatabase } from '../orchestrator/orchestrator.harness.js';
import { adminHeaders } from '../support/auth.js';

type Json = Record<string, unknown>;

const MODEL = 'bench-model';
const UNITS = 8;
const CLI_TIMEOUT_MS = 120_000;

let server: PrivateNatsServer;
let h: OrchestratorHarness;
let authorityEnv: Record<string, string>;
let authDb: TestDatabase;
beforeAll(async () => {
  server = await PrivateNatsServer.start();
  h = new OrchestratorHarness({
    prefix: 'bkp',
    env: { NATS_URL: server.url, TALLY__ORCHESTRATOR__BUDGET_MODE: 'metered' },
  });
  authDb = await h.newDatabase('auth-live');
  // The CLI must sign receipts on replay exactly as the authority does, so the key is known here.
  authorityEnv = { NATS_URL: server.url, TALLY_SIGNING_KEY: randomBytes(32).toString('base64url') };
  await h.startAuthority({ ...authorityEnv, ...authDb.env });
  await h.start(1);
}, 240_000);
afterAll(async () => {
  await h?.dispose();
  await server?.dispose();
}, 60_000);

/** Runs `tally <args>` in its own process, as an operator would, with the installation's environment. */
async function tally(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', './tools/register.mjs', 'apps/cli/src/main.ts', ...args], {
    cwd: process.cwd(),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const chunks: string[] = [];
  child.stdout.on('data', (c: Buffer) => chunks.push(c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => chunks.push(c.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), CLI_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, output: chunks.join('') };
}

async function digests(db: TestDatabase, set: ProjectionSet): Promise<Record<string, string>> {
  const ds = await openDataSource({
    ...db.open,
    entities: set.entities,
    migrations: set.migrations,
    sqliteBusyTimeoutMs: 10_000,
    postgresPoolSize: 1,
    postgresConnectTimeoutMs: 5_000,
    postgresStatementTimeoutMs: 30_000,
  });
  try {
    const out: Record<string, string> = {};
    for (const spec of set.specs(tallyNames(h.namespace)))
      out[spec.projection.name] = await projectionDigest(ds, spec.projection.tables);
    return out;
  } finally {
    await ds.destroy();
  }
}

async function authority(path: string, init?: RequestInit): Promise<Json> {
  const res = await fetch(`${h.authority!.url}${path}`, {
    ...init,
    headers: { 'content-type': 'application/json', ...adminHeaders() },
  });
  const body = (await res.json()) as Json;
  if (res.status >= 300) throw new Error(`${path} → ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** Everything a client can read about the units: the orchestrator's receipts and the authority's signed receipts. */
async function receipts(ids: readonly string[]): Promise<Json> {
  const out: Json = {};
  for (const id of ids) {
    out[`work:${id}`] = (await h.get(`/v1/work/${id}/receipt`)).body;
    out[`signed:${id}`] = await authority(`/v1/receipts?request_id=${encodeURIComponent(`${id}:attempt:0`)}`);
  }
  return out;
}

async function submitAndFinish(token: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const body = workBody({ token, route: [{ provider: 'scripted', model: MODEL }], limits: { max_tokens: 16 } });
    expect((await h.post('/v1/work', body)).status).toBe(202);
    ids.push(body['work_id'] as string);
  }
  for (const id of ids) expect((await h.terminal(id))['status']).toBe('completed');
  return ids;
}

async function streamState(stream: string): Promise<Json> {
  const nc = await connect({ servers: server.url });
  try {
    const { state } = await (await jetstreamManager(nc)).streams.info(stream);
    return { messages: state.messages, first_seq: state.first_seq, last_seq: state.last_seq };
  } finally {
    await nc.close();
  }
}

describe('issue 9 item 8: backup and restore of the ledger', () => {
  it('9.8 backup, destroy the NATS store, restore, replay: same projection digests, same signed receipts, and the ledger continues', async () => {
    h.provider().always(MODEL, {
      kind: 'stream',
      chunks: ['paid reply'],
      usage: { input_tokens: 7, output_tokens: 9 },
    });
    const cap = await authority('/v1/capabilities', {
      method: 'POST',
      body: JSON.stringify({
        subject_public_key: generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!,
        ttl_seconds: 3600,
        grants: [{ server_id: 'scripted', tool_name: MODEL, max_total_cost_units: 1_000_000, currency: 'USD' }],
      }),
    });
    const token = cap['token'] as string;
    const ids = await submitAndFinish(token, UNITS);
    await h.eventually('every hold to settle', async () => {
      const grant = ((await authority(`/v1/capabilities/${cap['id'] as string}/usage`))['grants'] as Json[])[0]!;
      return grant['invocation_count'] === UNITS && grant['exposed_cost_units'] === 0 ? grant : undefined;
    });
    const receiptsBefore = await receipts(ids);

    // An online backup of the ledger, with the services running.
    const dir = join(h.dir, 'backup');
    const orchestratorEnv = await h.envFor(0);
    // The operator runs backup and restore with the authority's key: it signs the manifest, and the restore checks it.
    const operatorEnv = { ...orchestratorEnv, ...authorityEnv };
    const backup = await tally(['backup', '--out', dir], operatorEnv);
    expect({ code: backup.code, output: backup.output }).toMatchObject({ code: 0 });
    expect(backup.output).toContain('backup complete');
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { streams: Json[] };
    const names = tallyNames(h.namespace);
    const ledger = [
      names.budgetEventsStream,
      names.workEventsStream,
      names.directoryEventsStream,
      names.workOutputStream,
      names.webhookEventsStream,
    ];
    expect(manifest.streams.map((s) => s['name'])).toEqual(ledger);
    expect(readdirSync(dir).sort()).toEqual(['manifest.json', ...ledger.map((n) => `${n}.tar.s2`)].sort());

    await Promise.all([h.authority!.stop(), h.processes[0]!.stop()]);
    // Nothing was appended after the backup, so the backup is the whole ledger.
    for (const s of manifest.streams) {
      const state = s['state'] as Json;
      expect(await streamState(s['name'] as string)).toEqual({
        messages: state['messages'],
        first_seq: state['first_seq'],
        last_seq: state['last_seq'],
      });
    }
    const budgetSet = budgetProjectionSet();
    const digestsBefore = {
      authority: await digests(authDb, budgetSet),
      orchestrator: await digests(await h.projectionDatabase(), orchestratorProjectionSet),
    };

    // The disaster: the server dies and its store is gone.
    await server.wipe();
    await expect(streamState(names.budgetEventsStream)).rejects.toThrow(/stream not found/);

    const restored = await tally(['restore', '--from', dir], operatorEnv);
    expect({ code: restored.code, output: restored.output }).toMatchObject({ code: 0 });
    expect(restored.output).toContain('restore complete');
    // A second restore is refused: the streams now hold events, and restore never overwrites them.
    const again = await tally(['restore', '--from', dir], operatorEnv);
    expect(again.code).toBe(1);
    expect(again.output).toMatch(
      /already exists with \d+ messages \(sequences 1\.\.\d+\); restore never overwrites events/,
    );

    // Replay both services into databases that have never seen these events.
    const authDb2 = await h.newDatabase('auth-restored');
    const orchDb2 = await h.newDatabase('orch-restored');
    const authorityCliEnv = { ...orchestratorEnv, ...authorityEnv, ...authDb2.env };
    const replayAuthority = await tally(['replay', '--service', 'budget-authority'], authorityCliEnv);
    const replayOrchestrator = await tally(['replay', '--service', 'agent-orchestrator'], {
      ...orchestratorEnv,
      ...orchDb2.env,
    });
    expect([replayAuthority.code, replayOrchestrator.code]).toEqual([0, 0]);
    expect({
      authority: await digests(authDb2, budgetSet),
      orchestrator: await digests(orchDb2, orchestratorProjectionSet),
    }).toEqual(digestsBefore);

    // The services come back on the rebuilt databases and show the same signed receipts.
    await h.startAuthority({ ...authorityEnv, ...authDb2.env });
    await h.startOne(0, orchDb2.env);
    expect(await receipts(ids)).toEqual(receiptsBefore);
    // The restored ledger keeps going: new admissions append onto the restored delegation tree.
    const [next] = await submitAndFinish(token, 1);
    const signed = (await authority(`/v1/receipts?request_id=${encodeURIComponent(`${next!}:attempt:0`)}`))[
      'receipts'
    ] as Json[];
    expect(signed.map((r) => r['verdict'])).toContain('allow');
    expect(existsSync(join(dir, 'manifest.json'))).toBe(true);
    // The procedure runs five CLI processes and boots the services twice, one after another.
  }, 300_000);
});
