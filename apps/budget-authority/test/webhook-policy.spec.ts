// Proves the pure webhook rules (issue 11): which ledger facts become which webhook with a
// stable id (an overrun, ADR 0043, among them), which URLs an endpoint may have, and that retries
// back off exponentially with jitter up to the bound; and that a signed call verifies with the
// standardwebhooks package.
import { describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import {
  grantOfHold,
  retryDelayMs,
  urlRefusal,
  webhookBody,
  webhookIdOf,
  webhookOf,
} from '../src/webhooks/webhook-policy.js';
import { signedHeaders } from '../src/webhooks/webhook-sender.js';

const CROSSED = {
  eventId: 'alert:cap-1:0:1733097600000:threshold:50',
  type: 'BudgetThresholdCrossed',
  payload: {
    capability_id: 'cap-1',
    grant_index: 0,
    percent: 50,
    committed_units: 60,
    limit_units: 100,
    period_start_ms: Date.UTC(2026, 11, 1),
    period_end_ms: Date.UTC(2026, 11, 2),
    hold_id: 'budget-hold:req:with:colons:cap-1:0',
    at_ms: 1_764_640_000_000,
  },
};

describe('webhook rules (issue 11)', () => {
  it('Issue 11: a threshold crossing becomes budget.threshold_crossed with a webhook-id derived from its event id, the same on every reading', () => {
    const a = webhookOf(CROSSED)!;
    const b = webhookOf(structuredClone(CROSSED))!;
    expect(a.webhook_id).toBe(b.webhook_id);
    expect(a.webhook_id).toBe(webhookIdOf(CROSSED.eventId));
    expect(a.webhook_id).toMatch(/^msg_[A-Za-z0-9_-]{32}$/);
    expect(webhookIdOf(`${CROSSED.eventId}0`)).not.toBe(a.webhook_id);
    expect(JSON.parse(webhookBody(a, 'acme'))).toEqual({
      type: 'budget.threshold_crossed',
      timestamp: new Date(CROSSED.payload.at_ms).toISOString(),
      data: {
        tenant_id: 'acme',
        capability_id: 'cap-1',
        grant_index: 0,
        percent: 50,
        committed_units: 60,
        limit_units: 100,
        period_start: '2026-12-01T00:00:00.000Z',
        period_end: '2026-12-02T00:00:00.000Z',
        hold_id: CROSSED.payload.hold_id,
      },
    });
  });

  it('Issue 11: expiries, ambiguities and revocations become their webhooks; other reversals and facts become none', () => {
    const hold = 'budget-hold:r:1:cap-9:2';
    expect(grantOfHold(hold)).toEqual({ capability_id: 'cap-9', grant_index: 2 });
    const expired = webhookOf({
      eventId: 'e1',
      type: 'HoldReversed',
      payload: { hold_id: hold, cause: 'expired', at_ms: 1 },
    });
    expect(expired).toMatchObject({
      type: 'hold.expired',
      data: { capability_id: 'cap-9', grant_index: 2, hold_id: hold },
    });
    expect(
      webhookOf({ eventId: 'e2', type: 'HoldReversed', payload: { hold_id: hold, cause: 'reconciled', at_ms: 1 } }),
    ).toBeUndefined();
    const ambiguity = `ambiguity:capture:${hold}:1`;
    expect(
      webhookOf({
        eventId: 'e3',
        type: 'AmbiguityRecorded',
        payload: { ambiguity_id: ambiguity, kind: 'capture', hold_id: hold, at_ms: 1 },
      }),
    ).toMatchObject({ type: 'ambiguity.recorded', data: { capability_id: 'cap-9', ambiguity_id: ambiguity } });
    expect(
      webhookOf({
        eventId: 'e4',
        type: 'AmbiguityResolved',
        payload: { ambiguity_id: ambiguity, resolution: 'captured', at_ms: 1 },
      }),
    ).toMatchObject({ type: 'ambiguity.resolved', data: { capability_id: 'cap-9', resolution: 'captured' } });
    expect(
      webhookOf({
        eventId: 'e5',
        type: 'CapabilityRevoked',
        payload: { capability_id: 'c', revoked_ids: ['c', 'd'], at_ms: 1 },
      }),
    ).toMatchObject({ type: 'capability.revoked', data: { capability_id: 'c', revoked_ids: ['c', 'd'] } });
    expect(webhookOf({ eventId: 'e6', type: 'SpendSettled', payload: { hold_id: hold, at_ms: 1 } })).toBeUndefined();
  });

  it('ADR 0043: a BudgetOverrun becomes budget.overrun with the charge, the hold and its grant, with a webhook-id of its own', () => {
    const hold = 'budget-hold:r:1:cap-9:0';
    const msg = webhookOf({
      eventId: `${hold}:overrun`,
      type: 'BudgetOverrun',
      payload: {
        capability_id: 'cap-9',
        grant_index: 0,
        hold_id: hold,
        realized_units: 306,
        exposure_units: 100,
        hold_overrun_units: 206,
        currency: 'USD',
        committed_units: 1206,
        limit_units: 1000,
        at_ms: 1_764_640_000_000,
      },
    })!;
    expect(msg.webhook_id).toBe(webhookIdOf(`${hold}:overrun`));
    expect(JSON.parse(webhookBody(msg, 'acme'))).toEqual({
      type: 'budget.overrun',
      timestamp: new Date(1_764_640_000_000).toISOString(),
      data: {
        tenant_id: 'acme',
        capability_id: 'cap-9',
        grant_index: 0,
        hold_id: hold,
        overrun_units: 206,
        realized_units: 306,
        hold_units: 100,
        currency: 'USD',
        committed_units: 1206,
        limit_units: 1000,
      },
    });
  });

  it('Issue 11: webhook URLs must be https, or http to loopback only when configured for local development; never with credentials', () => {
    const prod = { allowHttpLoopback: false };
    const local = { allowHttpLoopback: true };
    expect(urlRefusal('https://hooks.example.com/x', prod)).toBeUndefined();
    expect(urlRefusal('http://127.0.0.1:9000/x', prod)).toMatch(/https/);
    expect(urlRefusal('http://127.0.0.1:9000/x', local)).toBeUndefined();
    expect(urlRefusal('http://[::1]:9000/x', local)).toBeUndefined();
    expect(urlRefusal('http://localhost:9000/x', local)).toBeUndefined();
    expect(urlRefusal('http://hooks.example.com/x', local)).toMatch(/loopback/);
    expect(urlRefusal('http://127.0.0.1.example.com/x', local)).toMatch(/loopback/);
    expect(urlRefusal('https://user:secret@hooks.example.com/', prod)).toMatch(/credentials/);
    expect(urlRefusal('ftp://hooks.example.com/', local)).toBeDefined();
    expect(urlRefusal('not a url', prod)).toMatch(/absolute/);
  });

  it('Issue 11: retries back off exponentially with jitter, the first within 5 s, capped, and stop at attempts_max', () => {
    const policy = { attemptsMax: 6, retryBaseMs: 1_000, retryMaxMs: 8_000 };
    expect(retryDelayMs(1, policy, 0)).toBe(500);
    expect(retryDelayMs(1, policy, 0.999)).toBeLessThanOrEqual(1_000);
    expect(retryDelayMs(2, policy, 0)).toBe(1_000);
    expect(retryDelayMs(3, policy, 0.5)).toBe(3_000);
    expect(retryDelayMs(5, policy, 0.999)).toBeLessThanOrEqual(8_000);
    expect(retryDelayMs(5, policy, 0)).toBe(4_000);
    expect(retryDelayMs(6, policy, 0.5)).toBeUndefined();
    const spread = new Set(Array.from({ length: 20 }, (_, i) => retryDelayMs(3, policy, i / 20)));
    expect(spread.size).toBeGreaterThan(10);
  });

  it('Issue 11: a call is signed the Standard Webhooks way and verifies with standardwebhooks; another secret does not', () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const body = webhookBody(webhookOf(CROSSED)!, 'acme');
    const headers = signedHeaders({ secret, webhookId: 'msg_abc', body, now: new Date() });
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(secret).verify(body, headers)).toMatchObject({ type: 'budget.threshold_crossed' });
    const other = `whsec_${Buffer.alloc(32, 8).toString('base64')}`;
    expect(() => new Webhook(other).verify(body, headers)).toThrow();
  });
});
