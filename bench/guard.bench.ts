// Guard suite (issue 8): what the access guard costs. The same Nest HTTP app (Express, the
// JSON body parser with rawBody, the same two handlers) is served twice in this process:
// once behind the real AccessGuard with the real directory view, published keys, capability
// token verifier and subject-signature verifier (its replay ledger in NATS KV), and once
// behind a guard that hands every request a fixed principal. Rounds alternate between the
// two and the best round of each counts, so both see the same machine. The handlers do
// nothing, so the ratio is the guard's share of a bare request: on a real read or Admit,
// whose handler does far more, its share is smaller. Admit over NATS passes no guard.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { Body, Controller, Get, HttpCode, Module, Post, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { tallyNames } from '@tally/contracts';
import { startDirectory } from '@tally/directory-service';
import { KvReplayLedger, revocationsBucketSpec, signatureReplayBucketSpec } from '@tally/platform-app';
import { ensureKvBucket } from '@tally/platform-jetstream';
import {
  Access,
  AccessGuard,
  LayeredReplayLedger,
  MemoryReplayLedger,
  SubjectSigned,
  SubjectSignatures,
  subjectSignatureHeaders,
  type Principal,
} from '@tally/platform-auth';
import { deleteNamespaceStreams } from '@tally/testing';
import { TokenMint } from '../test/support/auth.js';
import type { BenchContext, BenchRow, BenchSuite } from './lib.js';

const SUITE = 'guard';
const CONCURRENCY = 16;
const ROUNDS = 10;

@Controller('bench')
class BenchController {
  @Get('read')
  @Access('reader', 'capability')
  read() {
    return { ok: true };
  }

  @Post('admit')
  @HttpCode(200)
  @Access('capability')
  @SubjectSigned()
  admit(@Body() body: unknown) {
    return { ok: body !== undefined };
  }
}

@Module({ controllers: [BenchController] })
class BenchModule {}

/** The baseline: no credential is read or checked; every request is this principal. */
class TrivialGuard implements CanActivate {
  constructor(private readonly principal: Principal) {}
  // Async like the real guard, so both take the same path through Nest's guard consumer.
  async canActivate(context: ExecutionContext): Promise<boolean> {
    context.switchToHttp().getRequest<{ principal?: Principal }>().principal = this.principal;
    return true;
  }
}

async function serve(guard: CanActivate): Promise<{ port: number; close: () => Promise<void> }> {
  const app = await NestFactory.create<NestExpressApplication>(BenchModule, {
    logger: false,
    bodyParser: false,
    rawBody: true,
  });
  app.useBodyParser('json', { limit: '1mb' });
  app.useGlobalGuards(guard);
  await app.listen(0, '127.0.0.1');
  // Idle sockets stay open while a pool of signed calls is prepared between windows.
  app.getHttpServer().keepAliveTimeout = 120_000;
  const port = (app.getHttpServer().address() as AddressInfo).port;
  return { port, close: () => app.close() };
}

interface Call {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

function send(port: number, call: Call): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method: call.method, path: call.path, headers: call.headers, agent },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(call.body);
  });
}

/** Closed loop: `callers` callers until `untilMs`; calls from `next` (each used once). Returns the calls made. */
async function closedLoop(port: number, callers: number, untilMs: number, next: (i: number) => Call): Promise<number> {
  let issued = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < untilMs) {
        const status = await send(port, next(issued++));
        if (status !== 200) failed++;
      }
    }),
  );
  if (failed > 0) throw new Error(`${failed} of ${issued} calls were refused: the bench's credentials are wrong`);
  return issued;
}

/**
 * The guard alone, without HTTP: canActivate on a request as Express hands it over, in a
 * tight loop. Its cost per call beside a whole request's CPU (the calls/cpu-s rows) is the
 * guard's share, a figure that a loaded host does not swing the way it swings throughput.
 */
async function guardCallCost(
  guard: AccessGuard,
  operatorKey: string,
  token: string,
  scale: number,
): Promise<BenchRow[]> {
  const handlers = { read: BenchController.prototype.read, admit: BenchController.prototype.admit };
  const contextOf = (handler: object, req: object) =>
    ({
      getType: () => 'http',
      getHandler: () => handler,
      getClass: () => BenchController,
      switchToHttp: () => ({ getRequest: () => req }),
    }) as unknown as ExecutionContext;
  const cases = [
    { name: 'canActivate, operator key', handler: handlers.read, headers: { authorization: `Bearer ${operatorKey}` } },
    { name: 'canActivate, capability token', handler: handlers.read, headers: { authorization: `Bearer ${token}` } },
    { name: 'canActivate, admit (body token)', handler: handlers.admit, headers: {}, body: { token } },
  ];
  const calls = Math.max(2_000, Math.round(50_000 * scale));
  const rows: BenchRow[] = [];
  for (const c of cases) {
    // Each request gets its own header string, as each HTTP request does.
    const request = () => ({
      method: 'GET',
      headers: Object.fromEntries(Object.entries(c.headers).map(([k, v]) => [k, `${v} `.trimEnd()])),
      body: c.body === undefined ? undefined : { ...c.body, token: `${c.body.token} `.trimEnd() },
    });
    for (let i = 0; i < 500; i++) await guard.canActivate(contextOf(c.handler, request()));
    const cpu = process.cpuUsage();
    for (let i = 0; i < calls; i++) await guard.canActivate(contextOf(c.handler, request()));
    const used = process.cpuUsage(cpu);
    rows.push({
      suite: SUITE,
      case: c.name,
      metric: 'cpu us/call',
      value: (used.user + used.system) / calls,
      note: `the guard alone, ${calls} calls; compare with 1e6 / calls/cpu-s of a whole request`,
    });
  }
  return rows;
}

/**
 * The throughput a request keeps with the guard, from CPU: 1 - (guard us) / (request us),
 * the request's CPU per call taken from its trivial-principal rows (all of them averaged).
 */
function guardShares(rows: readonly BenchRow[], costs: readonly BenchRow[]): BenchRow[] {
  const requestUs = (prefix: string) => {
    const baselines = rows.filter((r) => r.case.startsWith(prefix) && r.metric === 'calls/cpu-s');
    return 1e6 / (baselines.reduce((n, r) => n + r.value, 0) / baselines.length);
  };
  return costs.map((cost) => {
    const prefix = cost.case.includes('admit') ? 'POST admit, trivial' : 'GET read, trivial';
    const us = requestUs(prefix);
    return {
      suite: SUITE,
      case: cost.case.replace('canActivate', 'guarded request'),
      metric: 'throughput ratio',
      value: 1 - cost.value / us,
      note: `1 - ${cost.value.toFixed(1)} us guard / ${us.toFixed(0)} us per request (CPU); goal ≥ 0.95`,
    };
  });
}

interface Side {
  readonly port: number;
  readonly calls: (count: number) => Promise<(i: number) => Call>;
}

/** A guarded path and its baseline, measured side by side in the same windows. */
interface Pair {
  readonly name: string;
  readonly baseline: string;
  readonly guarded: Side;
  readonly note: string;
}

export const guardSuite: BenchSuite = {
  name: SUITE,
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const namespace = `bguard${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
    const names = tallyNames(namespace);
    const nc = await connect({ servers: ctx.natsUrl, timeout: 5_000 });
    const closers: (() => Promise<void>)[] = [];
    try {
      const js = jetstream(nc);
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: names.directoryEventsStream, subjects: [names.directoryEventsWildcard] });
      // Every capability token is checked against the revocation view, which follows this bucket.
      await ensureKvBucket(js, revocationsBucketSpec(names, 1));
      const directory = await startDirectory({
        js,
        jsm,
        names,
        publishTimeoutMs: 5_000,
        adminKey: undefined,
        oidc: undefined,
        staleAfterMs: 10_000,
        freshnessCheckMs: 1_000,
        keysPerTenantMax: 1_000,
        nowMs: () => Date.now(),
        onError: (error) => ctx.log(`directory: ${String(error)}`),
      });
      closers.push(() => directory.stop());
      const created = await directory.commands.createKey('default', 'reader', undefined);
      if (!created.ok) throw new Error(`bench key: ${JSON.stringify(created.rejection)}`);
      const operatorKey = created.value.key;
      const mint = await TokenMint.open(ctx.natsUrl, namespace);
      const token = mint.seal();
      const subject = generateKeyPairSync('ed25519');
      const boundToken = mint.seal({
        subject_public_key: subject.publicKey.export({ format: 'jwk' }).x!,
        bind: 'subject_key',
      });
      const skewSeconds = 30;
      await ensureKvBucket(js, signatureReplayBucketSpec(names, 'budget', 1));
      const shared = await KvReplayLedger.open(js, names.signatureReplayBucket('budget'), 5_000);
      const signatures = new SubjectSignatures({
        skewSeconds,
        replay: new LayeredReplayLedger(new MemoryReplayLedger(1_000_000), shared),
      });
      const authenticator = directory.authenticator();
      // The view has the mint's key once a token verifies.
      for (let i = 0; !('kind' in (await authenticator.authenticate({ kind: 'capability', token }))); i++) {
        if (i > 200) throw new Error('the directory view never showed the bench signing key');
        await new Promise((r) => setTimeout(r, 25));
      }

      const guarded = await serve(new AccessGuard(authenticator, signatures));
      closers.push(guarded.close);
      const trivialPrincipal = await authenticator.authenticate({ kind: 'capability', token });
      const trivial = await serve(new TrivialGuard(trivialPrincipal as Principal));
      closers.push(trivial.close);

      const admitBody = JSON.stringify({ request_id: 'r', server_id: 'tools', tool_name: 'search' });
      const json = { 'content-type': 'application/json' };
      const fixed = (call: Call) => async () => () => call;
      const read = { method: 'GET', path: '/bench/read' } as const;
      const admit = { method: 'POST', path: '/bench/admit', body: admitBody } as const;
      const pairs: Pair[] = [
        {
          name: 'GET read, guard: capability token',
          baseline: 'GET read, trivial principal (beside capability token)',
          guarded: { port: guarded.port, calls: fixed({ ...read, headers: { authorization: `Bearer ${token}` } }) },
          note: 'token verified once (Ed25519), then from the verified cache',
        },
        {
          name: 'POST admit, guard: capability token',
          baseline: 'POST admit, trivial principal (beside capability token)',
          guarded: {
            port: guarded.port,
            calls: fixed({ ...admit, headers: { ...json, authorization: `Bearer ${token}` } }),
          },
          note: 'the HTTP Admit path of an unbound capability (goal: ratio ≥ 0.95)',
        },
        {
          name: 'POST admit, guard: bound token + RFC 9421 signature',
          baseline: 'POST admit, trivial principal (beside signature)',
          guarded: { port: guarded.port, calls: (count) => signedPool(count) },
          note: 'opt-in proof of possession: digest, Ed25519 verify, one KV create per request',
        },
        {
          name: 'GET read, guard: operator key',
          baseline: 'GET read, trivial principal (beside operator key)',
          guarded: {
            port: guarded.port,
            calls: fixed({ ...read, headers: { authorization: `Bearer ${operatorKey}` } }),
          },
          note: 'reader key: id lookup in the live directory view, SHA-256 compare',
        },
      ];

      // Signed ahead of time (each signature is spent once), so the client's signing is not timed.
      async function signedPool(count: number): Promise<(i: number) => Call> {
        const pool: Call[] = [];
        for (let i = 0; i < count; i++) {
          const body = JSON.stringify({ request_id: `r${i}`, server_id: 'tools', tool_name: 'search' });
          const signed = await subjectSignatureHeaders({
            method: 'POST',
            path: '/bench/admit',
            body,
            privateKey: subject.privateKey,
          });
          pool.push({ ...admit, body, headers: { ...json, authorization: `Bearer ${boundToken}`, ...signed } });
        }
        return (i) => pool[i % pool.length]!;
      }

      // The two sides of a pair take turns in short windows (the order flipping each round), so
      // the load of a shared, noisy host falls on both alike. They never run at once: on one
      // event loop, two closed loops advance in lockstep and would hide what the guard costs.
      const windowMs = Math.max(300, Math.round(1_000 * ctx.scale));
      // Every path on both apps once before any is measured: the first pair measured would
      // otherwise pay for the JIT warming the whole HTTP stack (it showed as a 20 % guard cost).
      for (const pair of pairs)
        for (const port of [guarded.port, trivial.port])
          await closedLoop(port, CONCURRENCY, performance.now() + windowMs, await pair.guarded.calls(5_000));
      const rows: BenchRow[] = [];
      for (const pair of pairs) {
        const totals = { guarded: 0, trivial: 0, guardedMs: 0, trivialMs: 0, guardedCpuMs: 0, trivialCpuMs: 0 };
        // The pool must outlast a window: a signature is never sent twice.
        const poolSize = Math.round((windowMs / 1000) * 5_000);
        for (let round = 0; round <= ROUNDS; round++) {
          ctx.log(`guard: ${pair.name}, ${round === 0 ? 'warm-up' : `round ${round}`}`);
          const sides = round % 2 === 0 ? (['guarded', 'trivial'] as const) : (['trivial', 'guarded'] as const);
          for (const side of sides) {
            // The same requests, credentials and signatures included, go to both apps: only the guard differs.
            const next = await pair.guarded.calls(poolSize);
            const port = side === 'guarded' ? guarded.port : trivial.port;
            const started = performance.now();
            const cpu = process.cpuUsage();
            const count = await closedLoop(port, CONCURRENCY, started + windowMs, next);
            if (round === 0) continue;
            const used = process.cpuUsage(cpu);
            totals[side] += count;
            totals[`${side}Ms`] += performance.now() - started;
            totals[`${side}CpuMs`] += (used.user + used.system) / 1000;
          }
        }
        const note = `${ROUNDS} alternating windows of ${windowMs} ms per side, ${CONCURRENCY} callers`;
        // Per CPU second of this process (server and client alike): on a host where other work
        // takes the cores, wall-clock throughput swings with that work; CPU per call does not.
        const perCpu = (side: 'guarded' | 'trivial') => totals[side] / (totals[`${side}CpuMs`] / 1000);
        const perWall = (side: 'guarded' | 'trivial') => totals[side] / (totals[`${side}Ms`] / 1000);
        const cpuBaseline = `${pair.baseline}`;
        rows.push(
          {
            suite: SUITE,
            case: cpuBaseline,
            metric: 'calls/cpu-s',
            value: perCpu('trivial'),
            note: `baseline; ${note}`,
          },
          {
            suite: SUITE,
            case: pair.name,
            metric: 'calls/cpu-s',
            value: perCpu('guarded'),
            baselineCase: cpuBaseline,
            note: `${pair.note}; the ratio to compare`,
          },
          {
            suite: SUITE,
            case: cpuBaseline,
            metric: 'calls/s',
            value: perWall('trivial'),
            note: 'baseline, wall clock',
          },
          {
            suite: SUITE,
            case: pair.name,
            metric: 'calls/s',
            value: perWall('guarded'),
            baselineCase: cpuBaseline,
            note: 'wall clock (noisy on a shared host)',
          },
        );
      }
      const costs = await guardCallCost(new AccessGuard(authenticator, signatures), operatorKey, token, ctx.scale);
      rows.push(...costs, ...guardShares(rows, costs));
      return rows;
    } finally {
      for (const close of closers.reverse()) await close().catch(() => undefined);
      agent.destroy();
      await nc.close();
      await deleteNamespaceStreams(ctx.natsUrl, namespace).catch(() => undefined);
    }
  },
};
