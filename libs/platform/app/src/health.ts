// Liveness, readiness and metrics endpoints shared by both services. Readiness runs
// every registered check with a timeout and reports details, including the NATS
// durability report, so an operator can see what an acknowledgement really means.
import { Controller, Get, Header, HttpCode, Inject, Injectable, Res } from '@nestjs/common';
import { Access } from '@tally/platform-auth';
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

@Controller()
export class HealthController {
  constructor(
    @Inject(ReadinessRegistry) private readonly readiness: ReadinessRegistry,
    @Inject(MetricsRegistry) private readonly metrics: MetricsRegistry,
  ) {}

  @Get('healthz')
  @Access('public')
  @HttpCode(200)
  healthz() {
    return { status: 'ok' };
  }

  @Get('readyz')
  @Access('public')
  async readyz(@Res() res: ReplyLike) {
    const result = await this.readiness.run();
    // Degraded still serves (200): pulling every replica out of rotation would turn a warning into an outage.
    const status = !result.ready ? 'not_ready' : result.degraded.length > 0 ? 'degraded' : 'ready';
    res.status(result.ready ? 200 : 503).json({ status, degraded: result.degraded, checks: result.checks });
  }

  @Get('metrics')
  @Access('public')
  @Header('Content-Type', 'text/plain; version=0.0.4')
  async metricsText() {
    return this.metrics.registry.metrics();
  }
}
