// A TCP proxy that delays every byte by the same time in each direction, as a long network
// path would: a replica that talks to NATS through it sees each message later than its peers
// do, in the order it was sent. The delay can change while connections are open (a test lets
// a replica boot at full speed, then moves it away), and a change never reorders bytes.
import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { freePort } from './nats-server.js';

/** Bytes one direction of one connection may hold before its source is paused. */
const PENDING_BYTES_MAX = 8 * 1024 * 1024;

/** One direction of a proxied connection: a queue of chunks, each written when its delay is up. */
class DelayedPipe {
  private readonly queue: { dueMs: number; chunk: Buffer }[] = [];
  private pendingBytes = 0;
  private lastDueMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private ended = false;

  constructor(
    private readonly from: Socket,
    private readonly to: Socket,
    private readonly delayMs: () => number,
  ) {
    from.on('data', (chunk: Buffer) => this.push(chunk));
    from.on('end', () => {
      this.ended = true;
      this.drain();
    });
  }

  private push(chunk: Buffer): void {
    // Never before the chunk ahead of it, so a shorter delay cannot overtake a longer one.
    this.lastDueMs = Math.max(performance.now() + this.delayMs(), this.lastDueMs);
    this.queue.push({ dueMs: this.lastDueMs, chunk });
    this.pendingBytes += chunk.length;
    if (this.pendingBytes > PENDING_BYTES_MAX) this.from.pause();
    this.drain();
  }

  private drain(): void {
    clearTimeout(this.timer);
    const nowMs = performance.now();
    while (this.queue.length > 0 && this.queue[0]!.dueMs <= nowMs) {
      const { chunk } = this.queue.shift()!;
      this.pendingBytes -= chunk.length;
      if (!this.to.destroyed) this.to.write(chunk);
    }
    if (this.pendingBytes <= PENDING_BYTES_MAX && this.from.isPaused()) this.from.resume();
    if (this.queue.length > 0) this.timer = setTimeout(() => this.drain(), this.queue[0]!.dueMs - nowMs);
    else if (this.ended) this.to.end();
  }

  close(): void {
    clearTimeout(this.timer);
  }
}

export class LatencyProxy {
  /** Added to every chunk, each way; 0 passes bytes straight on (after one turn of the event loop). */
  delayMs = 0;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** Listens on a free local port and forwards each connection to `target` (host:port or nats://host:port). */
  static async start(target: string): Promise<LatencyProxy> {
    const upstream = new URL(target.includes('://') ? target : `tcp://${target}`);
    const port = await freePort();
    const server = createServer();
    const proxy = new LatencyProxy(server, port);
    server.on('connection', (client) => proxy.forward(client, upstream.hostname, Number(upstream.port)));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    return proxy;
  }

  /** The proxy as a NATS server URL. */
  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  private forward(client: Socket, host: string, port: number): void {
    const server = tcpConnect({ host, port });
    const pipes = [
      new DelayedPipe(client, server, () => this.delayMs),
      new DelayedPipe(server, client, () => this.delayMs),
    ];
    for (const socket of [client, server]) {
      this.sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        this.sockets.delete(socket);
        for (const pipe of pipes) pipe.close();
        client.destroy();
        server.destroy();
      });
    }
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
