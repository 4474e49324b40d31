// Issue 9 item 6: Tally on a real three-node JetStream cluster. Three nats-server
// processes on loopback, R3 streams, two budget-authority and two agent-orchestrator
// processes connected to all three servers. During a storm of metered work on a few
// shared delegation trees the server leading the budget stream is SIGKILLed and started
// again. Afterwards every unit has ended, nothing was lost or paid twice, each tree's
// budget held exactly, replay rebuilds both services' projections to the live digests,
// and /readyz shows three replicas, all current again. How long admissions stalled during
// the election is printed (measured by a probe that admits and settles in a loop), never asserted.
//
// Two authority replicas race on the same trees, which is safe only where the server
// serializes the expected-sequence check on clustered streams (nats-server >= 2.9.21,
// nats-server#4320). The installed 2.9.10 does not: two replicas fork the ledger there
// (seen here as 'event for unknown hold'), so on it the test runs one authority replica,
// says so, and checks that /readyz warns the operator (ADR 0018).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { NatsConnection } from '@nats-io/nats-core';
import { tallyNames } from '@tally/contracts';
import { connectNats } from '@tally/platform-jetstream';
import { CoreCommandClient } from '@tally/platform-nest';
import { CLUSTERED_OCC_MIN_VERSION, versionAtLeast } from '@tally/platform-jetstream';
import { NatsCluster } from '@tally/testing';
import { OrchestratorHarness, workBody } from '../orchestrator/orchestrator.harness.js';
import { adminHeaders } from '../support/auth.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const MODEL = 'bench-model';
/** Every reply reports this usage: 7 input tokens at 1,000,000/Mtok + 60 output at 2,000,000/Mtok = 127 units. */
const USAGE = { input_tokens: 7, output_tokens: 60 };
const REALIZED_UNITS = 127;
const TREES = 4;
const UNITS = 320;
/** Each tree has room for about 60 of its 80 units, so the storm also runs trees out of budget. */
const TREE_TOTAL_UNITS = 60 * REALIZED_UNITS + 8;
/** Submissions in flight at once, across both orchestrators. */
const SUBMITTERS = 12;
const REPLICAS = '3';
const CLI_TIMEOUT_MS = 90_000;
/** Longer than any unit holds its admission here, even across the election. */
const HOLD_TTL_MS = 45_000;

let cluster: NatsCluster | undefined;
let h: OrchestratorHarness;
let probeNc: NatsConnection | undefined;
/** Whether the servers serialize the clustered expected-sequence check, so replicas of one service may race. */
let occSerializable = false;

beforeAll(async () => {
  cluster = await NatsCluster.start(3);
  occSerializable = versionAtLeast(await cluster.serverVersion(), CLUSTERED_OCC_MIN_VERSION);
  h = new OrchestratorHarness({
    prefix: 'i9c',
    natsUrl: cluster.url,
    env: {
      TALLY__ORCHESTRATOR__BUDGET_MODE: 'metered',
      TALLY_STREAM_REPLICAS: REPLICAS,
      // A leader election takes seconds: give each budget command room to ride it out.
      TALLY__ORCHESTRATOR__BUDGET_TIMEOUT_MS: '10000',
    },
  });
  // TALLY_TEST_AUTHORITY_REPLICAS=2 races two replicas anyway, to see the fork for oneself.
  const authorityReplicas = Number(process.env['TALLY_TEST_AUTHORITY_REPLICAS'] ?? (occSerializable ? 2 : 1));
  if (!occSerializable)
    console.log(
      `Issue 9 cluster kill: nats-server ${await cluster.serverVersion()} does not serialize the expected-sequence ` +
        `check on clustered streams (nats-server#4320); running ${authorityReplicas} authority replica`,
    );
  const authorityEnv = {
    TALLY_STREAM_REPLICAS: REPLICAS,
    // A hold whose authorization landed while its answer was lost in the election is denied
    // to the caller (fail closed) and left to expire: keep that wait short here.
    TALLY__AUTHORITY__HOLD_TTL_MS: String(HOLD_TTL_MS),
  };
  // A cluster that has just elected its meta leader can still time out the first R3 stream
  // and bucket creations on a loaded host: the authority provisions first, on its own, and a
  // boot that timed out is tried once more before the test gives up.
  await onceMore('the authorities', () => h.startAuthorities(authorityReplicas, authorityEnv));
  await onceMore('the orchestrators', () => h.start(2));
}, 300_000);

async function onceMore<T>(what: string, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    console.log(`Issue 9 cluster kill: starting ${what} failed once, trying again: ${String(error).slice(0, 300)}`);
    return start();
  }
}

afterAll(async () => {
  // Every process this file started ends here, whatever failed above.
  await probeNc?.close().catch(() => undefined);
  await h?.dispose().catch(() => undefined);
  await cluster?.dispose();
}, 120_000);

async function authority(method: string, path: string, body?: unknown): Promise<Json> {
  const replica = h.authorities.find((p) => p.exited === null)!;
  const res = await fetch(`${replica.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...adminHeaders() },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000),
  });
  const json = (await res.json()) as Json;
  if (res.status >= 300)
    throw new Error(
      `${method} ${path} → ${res.status} ${JSON.stringify(json)}` +
        (res.status >= 500 ? `\nthe authority said:\n${replica.logs().slice(-4_000)}` : ''),
    );
  return json;
}

async function issue(grant: Json): Promise<Json> {
  const subject = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
  return authority('POST', '/v1/capabilities', { subject_public_key: subject, ttl_seconds: 3600, grants: [grant] });
}

/** Submits one unit to an orchestrator, re-sending the same body while the cluster answers 5xx or not at all. */
async function submit(body: Json, index: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (let attempt = 0; ; attempt++) {
    const url = h.processes[(index + attempt) % h.processes.length]!.url;
    const res = await h.post('/v1/work', body, url).catch((error: unknown) => ({ status: 0, body: { error } }));
    if (res.status === 202 || res.status === 200) return;
    if ((res.status > 0 && res.status < 500) || Date.now() > deadline)
      throw new Error(`submit ${String(body['work_id'])} → ${res.status} ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface ProbeSample {
  readonly startedAt: number;
  readonly answeredAt: number;
}

/**
 * Admits and settles one small hold at a time on a tree of its own, re-sending the same
 * command ids until each is answered, and records when each Admit was sent and answered.
 */
class AdmissionProbe {
  /** Admits that were allowed, in order. */
  readonly samples: ProbeSample[] = [];
  /** The reasons of the Admits that were denied. */
  readonly refused: string[] = [];
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly client: CoreCommandClient,
    private readonly token: string,
  ) {}

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  private async run(): Promise<void> {
    for (let i = 0; !this.stopped; i++) {
      const startedAt = performance.now();
      const admit = await this.untilAnswered('admit', `probe-a-${i}`, {
        request_id: `probe-${i}`,
        token: this.token,
        server_id: 'probe-srv',
        tool_name: 'compute',
        requested_cost: 10,
        parameters: {},
      });
      // A deny is an answer too, but not an admission: a commit whose acknowledgement was lost
      // is refused as unconfirmed (fail closed), which a loaded cluster does now and then.
      if (admit['verdict'] !== 'allow') {
        this.refused.push(String(admit['reason']));
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      this.samples.push({ startedAt, answeredAt: performance.now() });
      await this.untilAnswered('settle', `probe-s-${i}`, {
        hold_id: admit['hold_id'],
        outcome: { kind: 'completed', cost_units: 5, currency: 'USD' },
      });
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** An unknown outcome is re-sent with the same command id, as the orchestrator does, until the ledger answers. */
  private async untilAnswered(command: string, commandId: string, payload: Json): Promise<Json> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        const reply = await this.client.send<Json>('budget', command, commandId, payload, {
          timeoutMs: 2_000,
          attemptsMax: 3,
        });
        if (!reply.ok) throw new Error(`probe ${command} refused: ${JSON.stringify(reply.error)}`);
        return reply.value;
      } catch (error) {
        if (Date.now() > deadline || (error instanceof Error && error.message.startsWith('probe '))) throw error;
      }
    }
  }

  /** The longest wait for an allowed Admit, counted from the last one before `since` (or `since`). */
  longestStall(since: number): { stallMs: number; from: number; to: number } {
    let previous = since;
    for (const s of this.samples) if (s.answeredAt <= since) previous = s.answeredAt;
    let worst = { stallMs: 0, from: previous, to: previous };
    for (const s of this.samples.filter((x) => x.answeredAt > since)) {
      if (s.answeredAt - previous > worst.stallMs)
        worst = { stallMs: s.answeredAt - previous, from: previous, to: s.answeredAt };
      previous = s.answeredAt;
    }
    return worst;
  }
}

/** Runs `tally <args>` as its own process with `env`, as an operator would. */
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

/** The NATS durability report of an authority's /readyz. */
async function durability(): Promise<{ streams: Json[]; degraded: string[]; report: Json }> {
  const res = await fetch(`${h.authorities.find((p) => p.exited === null)!.metricsUrl}/readyz`, {
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await res.json()) as Json;
  const report = body['checks']['nats']['details']['durability'];
  return { streams: report['streams'], degraded: body['degraded'], report };
}

const allCurrent = (streams: Json[]) =>
  streams.every((s) => s['replicas'] === 3 && s['replicas_current'] === 3 && s['followers'].length === 2);

describe('Issue 9: Tally on a three-node JetStream cluster survives the loss of the stream leader', () => {
  it('Issue 9: SIGKILL of the budget stream leader mid-storm loses nothing, pays nothing twice, holds every budget exactly, replays to the live digests, and /readyz reports the replicas', async () => {
    const names = tallyNames(h.namespace);
    const before = await durability();
    expect(before.streams.length).toBeGreaterThan(0);
    expect(allCurrent(before.streams)).toBe(true);
    // The operator is told whether replicas of a service may race on this server.
    expect(before.report['occ_serializable']).toBe(occSerializable);
    if (!occSerializable) expect(before.report['warnings'].join('\n')).toContain('nats-server#4320');

    h.provider().always(MODEL, { kind: 'stream', chunks: ['paid reply'], usage: USAGE, latencyMs: 20 });
    const trees = await Promise.all(
      Array.from({ length: TREES }, () =>
        issue({ server_id: 'scripted', tool_name: MODEL, max_total_cost_units: TREE_TOTAL_UNITS, currency: 'USD' }),
      ),
    );
    const probeCap = await issue({
      server_id: 'probe-srv',
      tool_name: 'compute',
      max_cost_per_invocation: 10,
      currency: 'USD',
    });
    probeNc = await connectNats({
      url: cluster!.url,
      name: 'issue9-probe',
      connectTimeoutMs: 5_000,
      maxReconnectAttempts: -1,
      reconnectTimeWaitMs: 100,
    });
    const probe = new AdmissionProbe(
      new CoreCommandClient(probeNc, { names, retryDelayMs: 50 }),
      probeCap['token'] as string,
    );

    // The storm: UNITS metered units over TREES shared trees, SUBMITTERS at a time, both orchestrators.
    const units = Array.from({ length: UNITS }, (_, i) => {
      const tag = `unit-${String(i).padStart(4, '0')}`;
      const tree = i % TREES;
      const body = workBody({
        token: trees[tree]!['token'],
        route: [{ provider: 'scripted', model: MODEL }],
        messages: [{ role: 'user', content: tag }],
        limits: { max_tokens: 64, timeout_ms: 30_000 },
      });
      return { tag, tree, workId: body['work_id'] as string, body };
    });
    probe.start();
    let next = 0;
    const storm = Promise.all(
      Array.from({ length: SUBMITTERS }, async () => {
        for (let i = next++; i < UNITS; i = next++) await submit(units[i]!.body, i);
      }),
    );

    // Mid-storm: kill the server that leads the budget stream, wait for a new leader, start it again.
    await h.eventually('a quarter of the storm submitted', async () => (next >= UNITS / 4 ? true : undefined), 60_000);
    const leaderName = await cluster!.leaderOf(names.budgetEventsStream);
    expect(leaderName).toBeDefined();
    const leader = cluster!.node(leaderName!);
    const killedAt = performance.now();
    await leader.server.stop('SIGKILL');
    const newLeader = await h.eventually(
      'a new budget stream leader',
      async () => {
        const name = await cluster!.leaderOf(names.budgetEventsStream).catch(() => undefined);
        return name !== undefined && name !== leaderName ? name : undefined;
      },
      60_000,
    );
    const electedMs = performance.now() - killedAt;
    // The durability report sees the lost replica before it comes back.
    const during = await h.eventually(
      '/readyz to report the killed replica',
      async () => {
        const d = await durability();
        return d.streams.some((s) => s['replicas_current'] < 3) ? d : undefined;
      },
      30_000,
    );
    expect(during.degraded.join('\n')).toContain(leaderName!);
    await leader.server.restart();
    const restartedMs = performance.now() - killedAt;
    await storm;

    // Every unit ends.
    const ended = new Map<string, Json>();
    for (const unit of units) ended.set(unit.workId, await h.terminal(unit.workId, 90_000));
    await probe.stop();
    const stall = probe.longestStall(killedAt);
    const statuses = [...ended.values()].map((s) => s['status'] as string);
    const reasons = new Map<string, number>();
    for (const s of ended.values())
      if (s['status'] === 'failed') reasons.set(String(s['error']), (reasons.get(String(s['error'])) ?? 0) + 1);
    console.log(
      `Issue 9 cluster kill: killed ${leaderName} (budget stream leader); new leader ${newLeader} seen after ${electedMs.toFixed(0)} ms; ` +
        `restarted after ${restartedMs.toFixed(0)} ms; longest admission stall ${stall.stallMs.toFixed(0)} ms ` +
        `(from ${(stall.from - killedAt).toFixed(0)} to ${(stall.to - killedAt).toFixed(0)} ms after the kill; ` +
        `${probe.samples.length} probe admits allowed, ${probe.refused.length} refused); units completed ${statuses.filter((s) => s === 'completed').length}, ` +
        `failed ${statuses.filter((s) => s === 'failed').length} ${JSON.stringify(Object.fromEntries(reasons))}`,
    );
    expect(statuses.every((s) => s === 'completed' || s === 'failed')).toBe(true);

    // Nothing lost and nothing paid twice: each unit's provider calls match its attempts, and
    // each tree's authority usage is exactly the realized costs on its units' receipts.
    const callsByTag = new Map<string, number>();
    for (const r of h.provider().requests) {
      const tag = JSON.stringify(r.body['messages']).match(/unit-\d{4}/)?.[0];
      if (tag) callsByTag.set(tag, (callsByTag.get(tag) ?? 0) + 1);
    }
    const realized = new Array<number>(TREES).fill(0);
    const mismatched: Json[] = [];
    for (const unit of units) {
      const receipt = (await h.get(`/v1/work/${unit.workId}/receipt`)).body as Json;
      const attempts = receipt['attempts'] as Json[];
      const paid = attempts.filter((a) => a['usage']?.['cost_units'] !== undefined);
      const calls = callsByTag.get(unit.tag) ?? 0;
      const status = ended.get(unit.workId)!;
      if (calls !== paid.length || (status['status'] === 'completed' && paid.length === 0))
        mismatched.push({ unit: unit.tag, calls, status: status['status'], error: status['error'], receipt });
      for (const a of paid) realized[unit.tree]! += Number(a['usage']['cost_units']);
    }
    expect(mismatched).toEqual([]);
    for (let t = 0; t < TREES; t++) {
      let last: Json | undefined;
      const usage = await h
        .eventually(
          `tree ${t} to settle every hold`,
          async () => {
            const grant = (
              (await authority('GET', `/v1/capabilities/${trees[t]!['id']}/usage`))['grants'] as Json[]
            )[0]!;
            last = grant;
            return grant['exposed_cost_units'] === 0 && grant['committed_cost_units'] === realized[t]
              ? grant
              : undefined;
          },
          HOLD_TTL_MS + 60_000,
        )
        .catch((error: unknown) => {
          throw new Error(
            `tree ${t}: realized on receipts ${realized[t]}, usage ${JSON.stringify(last)}: ${String(error).slice(0, 300)}`,
          );
        });
      expect(usage['committed_cost_units']).toBe(realized[t]);
      expect(usage['realized_cost_units']).toBe(realized[t]);
      expect(usage['committed_cost_units'] as number).toBeLessThanOrEqual(TREE_TOTAL_UNITS);
      expect(realized[t]! % REALIZED_UNITS).toBe(0);
    }
    expect(realized.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);

    // Replay rebuilds both services' projections to the live digests.
    for (const [service, env] of [
      ['budget-authority', h.authorityEnvironment],
      ['agent-orchestrator', await h.envFor(0)],
    ] as const) {
      const verify = await tally(['replay', '--service', service, '--verify'], env);
      expect({ service, code: verify.code, mismatch: verify.output.includes('MISMATCH') }).toEqual({
        service,
        code: 0,
        mismatch: false,
      });
      expect(verify.output).toContain('verified');
    }

    // The durability report: three replicas per stream, all current again once the node is back.
    const after = await h.eventually('/readyz to report every replica current', async () => {
      const d = await durability();
      return allCurrent(d.streams) && d.degraded.length === 0 ? d : undefined;
    });
    for (const s of after.streams) expect(s).toMatchObject({ replicas: 3, replicas_current: 3 });
  }, 300_000);
});
