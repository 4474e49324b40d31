// Liveness and readiness endpoints shared by both services. Readiness runs every registered
// check with a timeout and reports details, including the NATS durability report, so an
// operator can see what an acknowledgement really means. That report names servers, streams
// and how full they are, so on the API port only an operator key (reader or above) reads it;
// a probe gets the status and the HTTP code. The metrics and the full report are served on
// the metrics port, for the scraper (ADR 0053).
import { Controller, Get, HttpCode, Inject, Injectable, Res } from '@nestjs/common';
import { Access, Caller, hasRole, type Principal } from '@tally/platform-auth';
import { Registry, collectDefaultMetrics } from 'prom-client';

export interface ReadinessCheck {
  readonly name: string;
  /** `degraded` lists what an operator must fix soon although the service still works (it stays ready). */
  check(): Promise<{ ok: boolean; degraded?: readonly string[]; details?: unknown }>;
}

type CheckResult = { ok: boolean; degraded?: readonly string[]; details?: unknown; error?: string };

@Injectable()
export class ReadinessRegistry {
  private readonly checks: ReadinessCheck[] = [];
  readonly checkTimeoutMs = 2_000;

  add(check: ReadinessCheck): void {
    this.checks.push(check);
  }

  async run(): Promise<{ ready: boolean; degraded: string[]; checks: Record<string, CheckResult> }> {
    const results = await Promise.all(this.checks.map((c) => this.runOne(c)));
    const checks = Object.fromEntries(results.map((r, i) => [this.checks[i]!.name, r]));
    return { ready: results.every((r) => r.ok), degraded: results.flatMap((r) => r.degraded ?? []), checks };
  }

  private async runOne(check: ReadinessCheck): Promise<CheckResult> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<{ ok: boolean; error: string }>((resolve) => {
      timer = setTimeout(
        () => resolve({ ok: false, error: `timed out after ${this.checkTimeoutMs} ms` }),
        this.checkTimeoutMs,
      );
    });
    try {
      return await Promise.race([check.check(), timeout]);
    } catch (error) {
      return { ok: false, error: (error as Error).message };
    } finally {
      clearTimeout(timer);
    }
  }
}

/** One Prometheus registry per process, with Node's default metrics. */
@Injectable()
export class MetricsRegistry {
  readonly registry = new Registry();
  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}

interface ReplyLike {
  status(code: number): ReplyLike;
  json(body: unknown): void;
}

export type ReadinessStatus = 'ready' | 'degraded' | 'not_ready';

/** The full readiness report and its HTTP code: 503 only when not ready. */
export async function readinessReport(
  readiness: ReadinessRegistry,
): Promise<{ code: number; status: ReadinessStatus; report: Record<string, unknown> }> {
  const result = await readiness.run();
  // Degraded still serves (200): pulling every replica out of rotation would turn a warning into an outage.
  const status = !result.ready ? 'not_ready' : result.degraded.length > 0 ? 'degraded' : 'ready';
  return {
    code: result.ready ? 200 : 503,
    status,
    report: { status, degraded: result.degraded, checks: result.checks },
  };
}

@Controller()
export class HealthController {
  constructor(@Inject(ReadinessRegistry) private readonly readiness: ReadinessRegistry) {}

  @Get('healthz')
  @Access('public')
  @HttpCode(200)
  healthz() {
    return { status: 'ok' };
  }

  /** A probe (no credential) gets `{status}`; an operator key of any role gets the whole report. */
  @Get('readyz')
  @Access('reader', 'possession')
  async readyz(@Caller() caller: Principal, @Res() res: ReplyLike) {
    const { code, status, report } = await readinessReport(this.readiness);
    res.status(code).json(hasRole(caller, 'reader') ? report : { status });
  }
}
