// A real local webhook receiver for the end-to-end suites: it verifies every call with the
// standardwebhooks package, answers each call as its script says (ok, fail, hang, redirect),
// can be stopped and started again on the same port, and counts logical deliveries by
// webhook-id the way a receiver that dedupes does.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';

export type Behaviour = 'ok' | 'fail' | 'hang' | 'redirect';

export interface ReceivedCall {
  readonly path: string;
  readonly id: string;
  readonly timestamp: string;
  readonly signature: string;
  readonly body: string;
  readonly verified: boolean;
  readonly behaviour: Behaviour;
  readonly atMs: number;
}

export class WebhookReceiver {
  readonly calls: ReceivedCall[] = [];
  /** The ids of calls answered 2xx: what a deduping receiver counts as delivered. */
  readonly delivered = new Set<string>();
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly hanging: ServerResponse[] = [];
  private port = 0;
  /** Per path, the behaviours of the next calls in order; then `fallback`. */
  private readonly scripts = new Map<string, Behaviour[]>();
  private readonly secrets = new Map<string, string>();

  constructor(private fallback: Behaviour = 'ok') {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  script(path: string, behaviours: Behaviour[]): void {
    this.scripts.set(path, [...behaviours]);
  }

  always(behaviour: Behaviour): void {
    this.fallback = behaviour;
  }

  /** Calls to `path` are verified with this endpoint secret. */
  secret(path: string, secret: string): void {
    this.secrets.set(path, secret);
  }

  callsTo(path: string): ReceivedCall[] {
    return this.calls.filter((c) => c.path === path);
  }

  async start(): Promise<this> {
    const server = createServer((req, res) => void this.handle(req, res));
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
    return this;
  }

  /** Stops at once, cutting every open connection (a crash of the receiver). */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    for (const socket of this.sockets) socket.destroy();
    this.hanging.length = 0;
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const path = req.url ?? '/';
    const behaviour = this.scripts.get(path)?.shift() ?? this.fallback;
    const header = (name: string) => String(req.headers[name] ?? '');
    this.calls.push({
      path,
      id: header('webhook-id'),
      timestamp: header('webhook-timestamp'),
      signature: header('webhook-signature'),
      body,
      verified: this.verify(path, body, req),
      behaviour,
      atMs: Date.now(),
    });
    switch (behaviour) {
      case 'ok':
        this.delivered.add(header('webhook-id'));
        res.writeHead(204).end();
        return;
      case 'fail':
        res.writeHead(500, { 'content-type': 'text/plain' }).end('a body Tally must not keep');
        return;
      case 'redirect':
        res.writeHead(302, { location: `${this.url}/redirected` }).end();
        return;
      case 'hang':
        this.hanging.push(res);
        return;
    }
  }

  private verify(path: string, body: string, req: IncomingMessage): boolean {
    const secret = this.secrets.get(path);
    if (!secret) return false;
    try {
      new Webhook(secret).verify(body, req.headers as Record<string, string>);
      return true;
    } catch {
      return false;
    }
  }
}
