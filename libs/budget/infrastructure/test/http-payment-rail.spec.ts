// Proves the HTTP payment rail adapter (ADR 0052) against a real local HTTP server: each
// money-moving call carries the Idempotency-Key of its one operation, definite answers are
// read as the port's outcomes, and anything else (a 5xx, a timeout, a refused connection, a
// body of another shape) is rail_error, an ambiguity, never a confirmation.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpPaymentRail } from '../src/index.js';

let server: Server;
let url: string;
const seen: { path: string; headers: IncomingHttpHeaders; body: string }[] = [];
let next: { status: number; body: string; delayMs?: number } = { status: 200, body: '{}' };

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      seen.push({ path: req.url ?? '', headers: req.headers, body });
      setTimeout(() => {
        res.writeHead(next.status, { 'content-type': 'application/json' });
        res.end(next.body);
      }, next.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rail/`;
}, 10_000);
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const rail = () => new HttpPaymentRail({ baseUrl: url, timeoutMs: 500 });
const capture = { authorization_id: 'auth_1', amount_units: 40n, currency: 'USD', reference: 'req-1' };

describe('HttpPaymentRail', () => {
  it('ADR 0052 a capture carries the key of its one operation and reads a confirmation as settled', async () => {
    next = { status: 200, body: '{"outcome":"settled","rail_reference":"cap_1"}' };
    expect(await rail().capture(capture)).toEqual({ outcome: 'settled', rail_reference: 'cap_1' });
    const call = seen.at(-1)!;
    expect(call.path).toBe('/rail/captures');
    expect(call.headers['idempotency-key']).toBe('capture:auth_1');
    expect(JSON.parse(call.body)).toEqual({ ...capture, amount_units: '40' });
  });

  it('ADR 0052 an authorization is keyed by its hold and read with its mode', async () => {
    next = { status: 200, body: '{"outcome":"authorized","authorization_id":"a1","mode":"reversible_hold"}' };
    const result = await rail().authorize({ reference: 'r', hold_id: 'h:1', amount_units: 5n, currency: 'USD' });
    expect(result).toEqual({ outcome: 'authorized', authorization_id: 'a1', mode: 'reversible_hold' });
    expect(seen.at(-1)!.headers['idempotency-key']).toBe('authorize:h:1');
    next = { status: 200, body: '{"outcome":"declined","detail":"no"}' };
    expect(await rail().authorize({ reference: 'r', hold_id: 'h:2', amount_units: 5n, currency: 'USD' })).toEqual({
      outcome: 'declined',
      detail: 'no',
    });
  });

  it.each([
    ['a 5xx', { status: 502, body: '{"outcome":"settled","rail_reference":"x"}' }],
    ['a timeout', { status: 200, body: '{"outcome":"settled","rail_reference":"x"}', delayMs: 1_500 }],
    ['another shape', { status: 200, body: '{"outcome":"done"}' }],
    ['a confirmation without its reference', { status: 200, body: '{"outcome":"settled"}' }],
    ['not JSON', { status: 200, body: 'ok' }],
  ])('ADR 0052 %s is rail_error (ambiguous), never a confirmation', async (_what, answer) => {
    next = answer;
    expect(await rail().capture(capture)).toMatchObject({ outcome: 'rail_error' });
  });

  it('ADR 0052 a rail that cannot be reached is rail_error, and its settlement state unknown', async () => {
    const gone = new HttpPaymentRail({ baseUrl: 'http://127.0.0.1:1', timeoutMs: 500 });
    expect(await gone.capture(capture)).toMatchObject({ outcome: 'rail_error' });
    expect(await gone.settlementState('req-1')).toMatchObject({ state: 'unknown' });
  });

  it('ADR 0052 a settlement state is read from the rail, and one it does not know is unknown', async () => {
    next = { status: 200, body: '{"state":"captured","authorization_id":"auth_1"}' };
    expect(await rail().settlementState('req 1')).toEqual({ state: 'captured', authorization_id: 'auth_1' });
    expect(seen.at(-1)!.path).toBe('/rail/settlements/req%201');
    next = { status: 200, body: '{"state":"teleported"}' };
    expect(await rail().settlementState('req-1')).toMatchObject({ state: 'unknown' });
  });
});
