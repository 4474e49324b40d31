// A real local HTTP payment rail for tests, speaking the protocol of the authority's HTTP
// rail adapter (ADR 0052). It honours idempotency keys as a card network's API does: the
// first call under a key performs the operation and keeps its answer; a later call under the
// same key with the same body gets that answer again and performs nothing; the same key with
// another body is a 422. It counts calls and performed operations per key, and can hold the
// answers to one kind of call until a number of them has arrived, so a test can make two
// replicas be inside the same rail call at once.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;

interface Kept {
  readonly body: string;
  readonly answer: Json;
}

interface Gate {
  readonly path: string;
  readonly callsMax: number;
  readonly waitMs: number;
  waiting: (() => void)[];
  arrived: number;
}

/** The longest request body the rail reads. */
const BODY_BYTES_MAX = 64 * 1024;
/** How many keys the rail remembers; a test that needs more is doing something else. */
const KEYS_MAX = 10_000;

export class PaymentRailServer {
  /** Calls received per Idempotency-Key, replays included. */
  readonly calls = new Map<string, number>();
  /** Operations performed per Idempotency-Key: at most one each, whatever the calls. */
  readonly performed = new Map<string, number>();
  private readonly kept = new Map<string, Kept>();
  /** What the rail knows per reference (the request id), for settlement queries. */
  private readonly states = new Map<string, { state: string; authorization_id: string }>();
  private gate: Gate | undefined;

  private constructor(private readonly http: Server) {}

  static async start(): Promise<PaymentRailServer> {
    const http = createServer();
    const rail = new PaymentRailServer(http);
    http.on('request', (req, res) => void rail.serve(req, res));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    return rail;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
  }

  /** Holds the answers to calls on `path` until `callsMax` of them arrived, or `waitMs` passed. */
  holdAnswers(path: string, callsMax: number, waitMs: number): void {
    this.gate = { path, callsMax, waitMs, waiting: [], arrived: 0 };
  }

  /** How many calls on `path` the current gate has seen. */
  gatedArrivals(): number {
    return this.gate?.arrived ?? 0;
  }

  callsOf(key: string): number {
    return this.calls.get(key) ?? 0;
  }

  performedOf(key: string): number {
    return this.performed.get(key) ?? 0;
  }

  /** Calls under every key that starts with `prefix` (as `capture:auth_x`), added up. */
  callsWith(prefix: string): number {
    return sumWith(this.calls, prefix);
  }

  /** Operations performed under every key that starts with `prefix`, added up: what the rail really did. */
  performedWith(prefix: string): number {
    return sumWith(this.performed, prefix);
  }

  /** The keys the calls starting with `prefix` came under. */
  keysWith(prefix: string): string[] {
    return [...this.calls.keys()].filter((key) => key.startsWith(prefix));
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    const body = await readBody(req);
    if (req.method === 'GET' && path.startsWith('/settlements/')) {
      const state = this.states.get(decodeURIComponent(path.slice('/settlements/'.length)));
      return send(res, 200, state ?? { state: 'none' });
    }
    const key = req.headers['idempotency-key'];
    if (req.method !== 'POST' || typeof key !== 'string' || body === undefined)
      return send(res, 400, { error: 'a POST with an Idempotency-Key and a JSON body' });
    this.calls.set(key, this.callsOf(key) + 1);
    await this.atGate(path);
    const kept = this.kept.get(key);
    if (kept) return kept.body === body.text ? send(res, 200, kept.answer) : send(res, 422, { error: 'key reused' });
    if (this.kept.size >= KEYS_MAX) return send(res, 503, { error: 'the test rail remembers no more keys' });
    const answer = this.perform(path, body.json);
    if (answer === undefined) return send(res, 404, { error: `no operation at ${path}` });
    this.kept.set(key, { body: body.text, answer });
    this.performed.set(key, this.performedOf(key) + 1);
    return send(res, 200, answer);
  }

  private perform(path: string, body: Json): Json | undefined {
    const reference = String(body['reference']);
    switch (path) {
      case '/authorizations': {
        const authorization_id = `auth_${String(body['hold_id']).replace(/[^A-Za-z0-9_]/g, '_')}`;
        this.states.set(reference, { state: 'authorized', authorization_id });
        return { outcome: 'authorized', authorization_id, mode: 'reversible_hold' };
      }
      case '/captures':
        return this.step(reference, String(body['authorization_id']), 'captured', 'settled');
      case '/releases':
        return this.step(reference, String(body['authorization_id']), 'released', 'released');
      case '/refunds':
        return this.step(reference, String(body['transaction_id']), 'refunded', 'refunded');
      default:
        return undefined;
    }
  }

  private step(reference: string, authorizationId: string, state: string, outcome: string): Json {
    this.states.set(reference, { state, authorization_id: authorizationId });
    return { outcome, rail_reference: `${state}_${authorizationId}` };
  }

  /** Waits at the gate of `path`, if there is one, until enough calls arrived or its wait ran out. */
  private async atGate(path: string): Promise<void> {
    const gate = this.gate;
    if (!gate || gate.path !== path) return;
    gate.arrived++;
    if (gate.arrived >= gate.callsMax) {
      for (const wake of gate.waiting) wake();
      gate.waiting = [];
      return;
    }
    await new Promise<void>((resolve) => {
      gate.waiting.push(resolve);
      setTimeout(resolve, gate.waitMs).unref();
    });
  }

  async stop(): Promise<void> {
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}

function sumWith(counts: ReadonlyMap<string, number>, prefix: string): number {
  let total = 0;
  for (const [key, count] of counts) if (key.startsWith(prefix)) total += count;
  return total;
}

async function readBody(req: IncomingMessage): Promise<{ text: string; json: Json } | undefined> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > BODY_BYTES_MAX) return undefined;
    chunks.push(chunk);
  }
  if (bytes === 0) return undefined;
  try {
    const json = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    return typeof json === 'object' && json !== null ? { text: JSON.stringify(json), json: json as Json } : undefined;
  } catch {
    return undefined;
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
