// Proves `tally replay` on a real installation: after the orchestrator (unmetered) has run a
// few units, `tally replay --service agent-orchestrator --verify` rebuilds into a scratch
// database and reports the live rows verified (exit 0); with the service stopped, `tally
// replay` rebuilds the live tables in place, with a progress bar, to the same digest.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { orchestratorProjectionSet, WORK_UNITS_PROJECTION } from '@tally/orchestrator-projections';
import { tallyNames } from '@tally/contracts';
import { openDataSource, projectionDigest, readCheckpoint } from '@tally/platform-typeorm';
import { OrchestratorHarness, workBody } from '../orchestrator/orchestrator.harness.js';

const UNITS = 4;
const CLI_TIMEOUT_MS = 180_000;
const h = new OrchestratorHarness({ prefix: 'rcli' });
beforeAll(async () => {
  await h.start(1);
}, 180_000);
afterAll(() => h.dispose(), 60_000);

/** Runs `tally <args>` as the CLI runs in production: its own process, the installation's environment. */
async function tally(args: string[]): Promise<{ code: number | null; output: string }> {
  const env = { ...process.env, ...(await h.envFor(0)) };
  const child = spawn(process.execPath, ['--import', './tools/register.mjs', 'apps/cli/src/main.ts', ...args], {
    cwd: process.cwd(),
    env,
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

async function liveRows(): Promise<{ digest: string; checkpoint: number }> {
  const db = await h.projectionDatabase();
  const ds = await openDataSource({
    ...db.open,
    entities: orchestratorProjectionSet.entities,
    migrations: orchestratorProjectionSet.migrations,
    sqliteBusyTimeoutMs: 10_000,
    postgresPoolSize: 1,
    postgresConnectTimeoutMs: 5_000,
    postgresStatementTimeoutMs: 30_000,
  });
  try {
    const [spec] = orchestratorProjectionSet.specs(tallyNames(h.namespace));
    return {
      digest: await projectionDigest(ds, spec!.projection.tables),
      checkpoint: await readCheckpoint(ds.manager, WORK_UNITS_PROJECTION, spec!.projection.stream),
    };
  } finally {
    await ds.destroy();
  }
}

describe('tally replay against a real orchestrator installation', () => {
  it('replay --verify exits 0 and prints verified; replay in place (service stopped) shows a progress bar and leaves the rows digest unchanged', async () => {
    h.provider().script('flaky-model', [{ kind: 'reset' }]);
    const ids: string[] = [];
    for (let i = 0; i < UNITS; i++) {
      const body = workBody({
        route: [{ provider: 'scripted', model: i === 0 ? 'flaky-model' : 'ok-model' }],
        messages: [{ role: 'user', content: `prompt ${i}` }],
      });
      expect((await h.post('/v1/work', body)).status).toBe(202);
      ids.push(body['work_id'] as string);
    }
    for (const id of ids) expect((await h.terminal(id))['status']).toBe('completed');
    await h.sessionLog(`s-${ids.at(-1)!}`, ids.at(-1)!);

    const verify = await tally(['replay', '--service', 'agent-orchestrator', '--verify']);
    expect({ code: verify.code, verified: verify.output.includes('verified') }).toEqual({ code: 0, verified: true });
    expect(verify.output).not.toContain('MISMATCH');

    await h.processes[0]!.stop();
    const before = await liveRows();
    const rebuilt = await tally(['replay', '--service', 'agent-orchestrator']);
    expect(rebuilt.code).toBe(0);
    expect(rebuilt.output).toMatch(/\[#+\]\s+100%/);
    expect(rebuilt.output).toContain('rebuilt:');
    const after = await liveRows();
    expect(after).toEqual(before);
  });
});
