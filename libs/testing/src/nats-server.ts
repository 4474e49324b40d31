// Real nats-server processes for tests: either the one already listening on NATS_URL,
// or a private one on a free port with a temp store (needed for restart tests).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Every server and service process a test starts, so none outlives the test runner even
 * when a test fails before its cleanup: on exit they are killed, synchronously.
 */
const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;

export function killOnExit(child: ChildProcess): void {
  liveChildren.add(child);
  child.once('exit', () => liveChildren.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const c of liveChildren) c.kill('SIGKILL');
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

export async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = tcpConnect({ port, host: '127.0.0.1' }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`port ${port} did not open within ${timeoutMs} ms`);
}

export interface PrivateNatsServerOptions {
  /** A configuration file's text (accounts, TLS, …); port, address, JetStream and store come from flags. */
  readonly config?: string;
  /** Environment of the server process, for `$VAR` references in the config. */
  readonly env?: Record<string, string>;
}

/** A nats-server this test owns: it can be stopped and started again on the same port and store. */
export class PrivateNatsServer {
  private process: ChildProcess | undefined;
  private output = '';
  private constructor(
    readonly port: number,
    readonly storeDir: string,
    private readonly options: PrivateNatsServerOptions,
  ) {}

  static async start(options: PrivateNatsServerOptions = {}): Promise<PrivateNatsServer> {
    const dir = mkdtempSync(join(tmpdir(), 'tally-nats-'));
    const server = new PrivateNatsServer(await freePort(), dir, options);
    if (options.config !== undefined) writeFileSync(join(dir, 'nats-server.conf'), options.config);
    await server.restart();
    return server;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** What the server wrote to stdout and stderr (e.g. its permission violations). */
  logs(): string {
    return this.output;
  }

  async restart(): Promise<void> {
    if (this.process) await this.stop();
    const binary = process.env['NATS_SERVER_BIN'] ?? 'nats-server';
    const config = this.options.config === undefined ? [] : ['-c', join(this.storeDir, 'nats-server.conf')];
    const store = join(this.storeDir, 'js');
    const child = spawn(binary, [...config, '-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', store], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...this.options.env },
    });
    const keep = (chunk: Buffer) => (this.output = (this.output + chunk.toString('utf8')).slice(-200_000));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.process = child;
    killOnExit(child);
    await waitForPort(this.port, 10_000).catch((error: unknown) => {
      throw new Error(`${String(error)}; nats-server said:\n${this.output}`);
    });
  }

  /** Stops the server. SIGKILL models a crash; SIGTERM a clean shutdown. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill(signal);
    });
  }

  /** Destroys the store as a disaster would: kills the server, deletes every file JetStream kept, starts it empty on the same port and config. */
  async wipe(): Promise<void> {
    await this.stop('SIGKILL');
    rmSync(join(this.storeDir, 'js'), { recursive: true, force: true });
    await this.restart();
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.storeDir, { recursive: true, force: true });
  }
}

/** The shared NATS URL for tests that do not need to restart the server. */
export function sharedNatsUrl(): string {
  return process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';
}

/** A unique namespace per test, so streams never collide on a shared server. */
export function uniqueNamespace(prefix: string): string {
  return `${prefix}${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`.replace(
    /[^A-Za-z0-9_-]/g,
    '',
  );
}
