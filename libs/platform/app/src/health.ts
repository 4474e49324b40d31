// Liveness, readiness and metrics endpoints shared by both services. Readiness runs
// every registered check with a timeout and reports details, including the NATS
// durability report, so an operator can see what an acknowledgement really means.
import { Controller, Get, Header, HttpCode, Inject, Injectable, Res } from '@nestjs/common';
import { Registry, collectDefaultMetrics } from 'prom-client';

export interface ReadinessCheck {
  readonly name: string;
  check(): Promise<{ ok: boolean; details?: unknown }>;
}

@Injectable()
export class ReadinessRegistry {
  private readonly checks: ReadinessCheck[] = [];
  readonly checkTimeoutMs = 2_000;

  add(check: ReadinessCheck): void {
    this.checks.push(check);
  }

  async run(): Promise<{ ready: boolean; checks: Record<string, { ok: boolean; details?: unknown; error?: string }> }> {
    const results = await Promise.all(this.checks.map((c) => this.runOne(c)));
    const checks = Object.fromEntries(results.map((r, i) => [this.checks[i]!.name, r]));
    return { ready: results.every((r) => r.ok), checks };
  }

  private async runOne(check: ReadinessCheck): Promise<{ ok: boolean; details?: unknown; error?: string }> {
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
  @HttpCode(200)
  healthz() {
    return { status: 'ok' };
  }

  @Get('readyz')
  async readyz(@Res() res: ReplyLike) {
    const result = await this.readiness.run();
    res.status(result.ready ? 200 : 503).json({ status: result.ready ? 'ready' : 'not_ready', checks: result.checks });
  }

  @Get('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4')
  async metricsText() {
    return this.metrics.registry.metrics();
  }
}
