// The pure rules of tenant webhooks (ADR 0040): which ledger facts become which webhook, the
// stable webhook-id of each, what an endpoint's URL may be, and when a failed call is tried
// again. No I/O here: the fan-out and the delivery worker apply these to what they read.
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';

import type { WebhookEventType } from '@tally/contracts';

export { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '@tally/contracts';

/** The ledger event types a webhook can come from: the fan-out skips every other commit by its headers alone. */
export const SOURCE_EVENT_TYPES: ReadonlySet<string> = new Set([
  'BudgetThresholdCrossed',
  'BudgetExhausted',
  'BudgetOverrun',
  'HoldReversed',
  'AmbiguityRecorded',
  'AmbiguityResolved',
  'CapabilityRevoked',
]);

/** A ledger event as the fan-out reads it: the envelope's id and type, and its wire payload. */
export interface SourceEvent {
  readonly eventId: string;
  readonly type: string;
  readonly payload: Readonly<Record<string, unknown>>;
}

/** What one ledger fact tells every endpoint of its tenant that asked for `type`. */
export interface WebhookMessage {
  /** The `webhook-id` header: the same on every attempt and every replica, derived from the event id. */
  readonly webhook_id: string;
  readonly type: WebhookEventType;
  readonly source_event_id: string;
  /** When the fact happened (epoch ms): the body's timestamp, and what endpoint registration times compare with. */
  readonly at_ms: number;
  readonly capability_id: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/**
 * Standard Webhooks ids are opaque strings; a hash of the ledger event id keeps them short,
 * header-safe and stable, so a receiver dedupes redeliveries and replays by it.
 */
export function webhookIdOf(sourceEventId: string): string {
  return `msg_${createHash('sha256').update(sourceEventId).digest('base64url').slice(0, 32)}`;
}

/**
 * Hold ids are `budget-hold:<request>:<capability>:<grant>` (or the preflight form), and a
 * capability id is a single subject token, so the two last parts name the hold's grant even
 * when the request id contains colons.
 */
export function grantOfHold(holdId: string): { capability_id: string; grant_index: number } | undefined {
  const parts = holdId.split(':');
  if (parts.length < 4) return undefined;
  const grant = Number(parts[parts.length - 1]);
  const capability = parts[parts.length - 2]!;
  if (!Number.isSafeInteger(grant) || grant < 0 || capability.length === 0) return undefined;
  return { capability_id: capability, grant_index: grant };
}

/** An ambiguity id is `ambiguity:<kind>:<hold id>:<ordinal>`. */
export function holdOfAmbiguity(ambiguityId: string): string | undefined {
  const match = /^ambiguity:[^:]+:(.+):\d+$/.exec(ambiguityId);
  return match?.[1];
}

const num = (value: unknown): number => (typeof value === 'number' ? value : Number(value));
const iso = (ms: unknown): string | undefined => (typeof ms === 'number' ? new Date(ms).toISOString() : undefined);

function message(
  event: SourceEvent,
  type: WebhookEventType,
  capabilityId: string,
  data: Record<string, unknown>,
): WebhookMessage {
  const clean = Object.fromEntries(Object.entries(data).filter(([, v]) => v !== undefined));
  return {
    webhook_id: webhookIdOf(event.eventId),
    type,
    source_event_id: event.eventId,
    at_ms: num(event.payload['at_ms']),
    capability_id: capabilityId,
    data: { capability_id: capabilityId, ...clean },
  };
}

function alert(event: SourceEvent, type: WebhookEventType): WebhookMessage {
  const p = event.payload;
  return message(event, type, String(p['capability_id']), {
    grant_index: p['grant_index'],
    ...(type === 'budget.threshold_crossed' ? { percent: p['percent'] } : {}),
    committed_units: p['committed_units'],
    limit_units: p['limit_units'],
    period_start: iso(p['period_start_ms']),
    period_end: iso(p['period_end_ms']),
    hold_id: p['hold_id'],
  });
}

/** A provider billed beyond its hold (ADR 0043): the whole charge is booked, and the grant is shut until its limit covers it. */
function overrun(event: SourceEvent): WebhookMessage {
  const p = event.payload;
  return message(event, 'budget.overrun', String(p['capability_id']), {
    grant_index: p['grant_index'],
    hold_id: p['hold_id'],
    overrun_units: p['hold_overrun_units'],
    realized_units: p['realized_units'],
    hold_units: p['exposure_units'],
    currency: p['currency'],
    committed_units: p['committed_units'],
    limit_units: p['limit_units'],
    period_start: iso(p['period_start_ms']),
    period_end: iso(p['period_end_ms']),
  });
}

function ofHold(event: SourceEvent, type: WebhookEventType, holdId: string, extra: Record<string, unknown>) {
  const grant = grantOfHold(holdId);
  if (!grant) return undefined;
  return message(event, type, grant.capability_id, { grant_index: grant.grant_index, hold_id: holdId, ...extra });
}

/** The webhook a ledger event becomes, or undefined when it is none (most events are none). */
export function webhookOf(event: SourceEvent): WebhookMessage | undefined {
  const p = event.payload;
  switch (event.type) {
    case 'BudgetThresholdCrossed':
      return alert(event, 'budget.threshold_crossed');
    case 'BudgetExhausted':
      return alert(event, 'budget.exhausted');
    case 'BudgetOverrun':
      return overrun(event);
    case 'HoldReversed':
      return p['cause'] === 'expired' ? ofHold(event, 'hold.expired', String(p['hold_id']), {}) : undefined;
    case 'AmbiguityRecorded':
      return ofHold(event, 'ambiguity.recorded', String(p['hold_id']), {
        ambiguity_id: p['ambiguity_id'],
        kind: p['kind'],
      });
    case 'AmbiguityResolved': {
      const hold = holdOfAmbiguity(String(p['ambiguity_id']));
      if (hold === undefined) return undefined;
      return ofHold(event, 'ambiguity.resolved', hold, {
        ambiguity_id: p['ambiguity_id'],
        resolution: p['resolution'],
      });
    }
    case 'CapabilityRevoked':
      return message(event, 'capability.revoked', String(p['capability_id']), { revoked_ids: p['revoked_ids'] });
    default:
      return undefined;
  }
}

/** The body every attempt of one message sends, byte for byte: `{type, timestamp, data}` (http-api.md). */
export function webhookBody(msg: WebhookMessage, tenantId: string): string {
  return JSON.stringify({
    type: msg.type,
    timestamp: new Date(msg.at_ms).toISOString(),
    data: { tenant_id: tenantId, ...msg.data },
  });
}

export interface UrlPolicy {
  readonly allowHttpLoopback: boolean;
}

const URL_LENGTH_MAX = 2_048;

function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

/** Why a webhook URL is refused, or undefined when it may be called. */
export function urlRefusal(raw: string, policy: UrlPolicy): string | undefined {
  if (raw.length > URL_LENGTH_MAX) return `url must be at most ${URL_LENGTH_MAX} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url must be an absolute URL';
  }
  // Credentials in a URL would be stored in the ledger and sent to wherever it points.
  if (url.username !== '' || url.password !== '') return 'url must not carry credentials';
  if (url.hash !== '') return 'url must not have a fragment';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && policy.allowHttpLoopback && isLoopback(url.hostname)) return undefined;
  return policy.allowHttpLoopback
    ? 'url must be https, or http to a loopback host'
    : 'url must be https (http to loopback only when webhooks.allow_http_loopback is set for local development)';
}

/**
 * What a reader is told about a call that did not deliver: a coarse code, never the error's own
 * text, which can name an internal address, a port or a certificate (ADR 0053).
 */
export const DELIVERY_ERRORS = [
  'timeout',
  'connection_refused',
  'connection_reset',
  'dns_error',
  'tls_error',
  'network_error',
  'redirect',
  'http_4xx',
  'http_5xx',
  'refused_target',
  /** The last call never finished (its replica stopped mid-call). */
  'interrupted',
] as const;

export type DeliveryError = (typeof DELIVERY_ERRORS)[number];

/** The code of an answer that is not a 2xx. */
export function statusError(status: number): DeliveryError {
  if (status >= 500) return 'http_5xx';
  if (status >= 400) return 'http_4xx';
  return 'redirect';
}

const CODES: ReadonlySet<string> = new Set(DELIVERY_ERRORS);

/** Node's and OpenSSL's codes of a failed handshake or certificate check (EPROTO: the peer does not speak TLS). */
export const TLS_ERROR_CODE =
  /^(EPROTO|ERR_TLS_|ERR_SSL_|ERR_OSSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|INVALID_CA)/;

/**
 * The coarse code of a recorded error. Facts written before ADR 0053 kept a short text
 * (`timeout after 1500 ms`, `connection failed: ECONNREFUSED`, `status 500`, `redirect 302 not
 * followed`, a URL refusal's sentence); readers are shown the code those texts stand for.
 */
export function coarseDeliveryError(recorded: string): DeliveryError {
  if (CODES.has(recorded)) return recorded as DeliveryError;
  if (recorded.startsWith('timeout')) return 'timeout';
  if (recorded.startsWith('redirect')) return 'redirect';
  const status = /^status (\d{3})$/.exec(recorded);
  if (status) return statusError(Number(status[1]));
  if (recorded.startsWith('url ')) return 'refused_target';
  if (recorded === 'the last attempt did not finish') return 'interrupted';
  if (/ECONNREFUSED/.test(recorded)) return 'connection_refused';
  if (/ECONNRESET|EPIPE|socket hang up/.test(recorded)) return 'connection_reset';
  if (/ENOTFOUND|EAI_/.test(recorded)) return 'dns_error';
  const code = /^connection failed: (\S+)$/.exec(recorded)?.[1];
  if (code !== undefined && TLS_ERROR_CODE.test(code)) return 'tls_error';
  return 'network_error';
}

export interface RetryPolicy {
  readonly attemptsMax: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
}

/**
 * How long to wait after failed attempt `attempt` (1 for the first call): exponential, capped,
 * with jitter in [half, all] of the step so endpoints that failed together do not retry
 * together. `random` is in [0, 1). Undefined: the bound is reached, dead-letter it.
 */
export function retryDelayMs(attempt: number, policy: RetryPolicy, random: number): number | undefined {
  if (attempt >= policy.attemptsMax) return undefined;
  const step = Math.min(policy.retryMaxMs, policy.retryBaseMs * 2 ** Math.min(attempt - 1, 40));
  return Math.max(1, Math.round(step / 2 + (step / 2) * random));
}
