// Runs a Tally service as a real child process, the way it runs in production, so
// end-to-end and fault tests can kill it (SIGKILL) and start it again.
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort, killOnExit } from './nats-server.js';

export type ServiceName = 'budget-authority' | 'agent-orchestrator';

const MAIN: Record<ServiceName, string> = {
  'budget-authority': 'apps/budget-authority/src/main.ts',
  'agent-orchestrator': 'apps/agent-orchestrator/src/main.ts',
};
const PORT_ENV: Record<ServiceName, string> = {
  'budget-authority': 'AUTHORITY_HTTP_PORT',
  'agent-orchestrator': 'ORCHESTRATOR_HTTP_PORT',
};
/** The metrics port (ADR 0053): /metrics and the full /readyz report. */
const METRICS_PORT_ENV: Record<ServiceName, string> = {
  'budget-authority': 'AUTHORITY_METRICS_PORT',
  'agent-orchestrator': 'ORCHESTRATOR_METRICS_PORT',
};

export interface ServiceProcessOptions {
  readonly service: ServiceName;
  readonly env: Record<string, string>;
  readonly readyTimeoutMs?: number;
  /** Wait for /readyz before returning (default true). */
  readonly waitReady?: boolean;
  /**
   * Node's arguments that run the service, e.g. `['dist/apps/budget-authority/src/main.js']` for the
   * compiled build (ADR 0056). Default: its TypeScript sources through the loader.
   */
  readonly command?: readonly string[];
  /** The service's working directory (default: this process's). */
  readonly cwd?: string;
}

export class ServiceProcess {
  private exitCode: number | null = null;
  private readonly output: string[] = [];

  private constructor(
    readonly service: ServiceName,
    readonly port: number,
    readonly metricsPort: number,
    private readonly child: ChildProcess,
  ) {
    const keep = (chunk: Buffer) => {
      this.output.push(chunk.toString('utf8'));
      if (this.output.length > 2_000) this.output.splice(0, 1_000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.once('exit', (code, signal) => {
      this.exitCode = code ?? (signal ? 128 : 1);
    });
  }

  static async start(options: ServiceProcessOptions): Promise<ServiceProcess> {
    const port = Number(options.env[PORT_ENV[options.service]] ?? (await freePort()));
    const metricsPort = Number(options.env[METRICS_PORT_ENV[options.service]] ?? (await freePort()));
    const env = {
      ...process.env,
      ...options.env,
      [PORT_ENV[options.service]]: String(port),
      [METRICS_PORT_ENV[options.service]]: String(metricsPort),
      LOG_LEVEL: options.env['LOG_LEVEL'] ?? 'warn',
    };
    // Set TALLY_SERVICE_CPU_PROF_DIR to get a CPU profile of every service a test or bench starts.
    const profileDir = process.env['TALLY_SERVICE_CPU_PROF_DIR'];
    const profile = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
    const command = options.command ?? ['--import', './tools/register.mjs', MAIN[options.service]];
    const child = spawn(process.execPath, [...profile, ...command], {
      cwd: options.cwd ?? process.cwd(),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    killOnExit(child);
    const service = new ServiceProcess(options.service, port, metricsPort, child);
    if (options.waitReady !== false)
      await service.waitReady(options.readyTimeoutMs ?? 60_000).catch(async (error: unknown) => {
        // A service that never became ready is nobody's to stop later: stop it here.
        await service.stop('SIGKILL');
        throw error;
      });
    return service;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The metrics port's base: `${metricsUrl}/metrics`, and `${metricsUrl}/readyz` for the full readiness report. */
  get metricsUrl(): string {
    return `http://127.0.0.1:${this.metricsPort}`;
  }

  get exited(): number | null {
    return this.exitCode;
  }

  logs(): string {
    return this.output.join('');
  }

  async waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.exitCode !== null)
        throw new Error(`${this.service} exited with ${this.exitCode} before it was ready:\n${this.logs()}`);
      try {
        const res = await fetch(`${this.url}/readyz`, { signal: AbortSignal.timeout(1_000) });
        if (res.ok) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${this.service} was not ready within ${timeoutMs} ms:\n${this.logs()}`);
  }

  /** Waits for the process to end on its own, e.g. after a boot failure. */
  async waitExit(timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (this.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    if (this.exitCode === null) throw new Error(`${this.service} did not exit within ${timeoutMs} ms`);
    return this.exitCode;
  }

  /** SIGKILL models a crash; SIGTERM a graceful stop. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<void> {
    if (this.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(timer);
  }
}
