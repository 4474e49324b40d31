// One webhook call, the Standard Webhooks way (the standardwebhooks package signs it): a POST
// with webhook-id, webhook-timestamp (this attempt's, in Unix seconds) and webhook-signature,
// bounded by a timeout, never following a redirect, and never reading the answer's body. The
// connection goes only to the addresses the target check allowed (ADR 0053): the host name
// still names the server (Host header, TLS server name and certificate check), but it is not
// resolved again, so a DNS answer that changed since the check cannot send the call elsewhere.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { statusError, TLS_ERROR_CODE, type DeliveryError } from './webhook-policy.js';
import type { ResolvedAddress } from './webhook-targets.js';

export interface CallResult {
  readonly ok: boolean;
  readonly status?: number;
  /** Why it failed, as a coarse code a reader may see; no response body, no URL, no address. */
  readonly error?: DeliveryError;
  /** For the operator's log only: the error's code (ECONNREFUSED, CERT_HAS_EXPIRED…). */
  readonly cause?: string;
  readonly durationMs: number;
}

export interface WebhookCall {
  readonly url: string;
  /** Where to connect: the addresses the target check allowed for the URL's host. */
  readonly addresses: readonly ResolvedAddress[];
  readonly secret: string;
  readonly webhookId: string;
  readonly body: string;
  readonly timeoutMs: number;
  readonly now: Date;
}

const USER_AGENT = 'tally-webhooks/1';

export function signedHeaders(
  call: Pick<WebhookCall, 'secret' | 'webhookId' | 'body' | 'now'>,
): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'webhook-id': call.webhookId,
    'webhook-timestamp': String(Math.floor(call.now.getTime() / 1000)),
    'webhook-signature': new Webhook(call.secret).sign(call.webhookId, call.now, call.body),
  };
}

/** A lookup that answers with the checked addresses only (all of them when the socket asks for all). */
export function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  if (addresses.length === 0) throw new Error('a pinned lookup needs at least one address');
  const first = addresses[0]!;
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options.all)
      callback(
        null,
        addresses.map((a) => ({ address: a.address, family: a.family })),
      );
    else callback(null, first.address, first.family);
  }) as unknown as LookupFunction;
}

class CallTimeout extends Error {
  readonly code = 'TALLY_CALL_TIMEOUT';
}

/** The answer's status once its head arrived; the body is destroyed unread. */
function post(call: WebhookCall): Promise<number> {
  const url = new URL(call.url);
  const body = Buffer.from(call.body, 'utf8');
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<number>((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: { ...signedHeaders(call), 'content-length': String(body.length) },
        // A fresh connection per call: a pooled one may lead to an address checked under an older policy.
        agent: false,
        lookup: pinnedLookup(call.addresses),
      },
      (res: IncomingMessage) => {
        clearTimeout(timer);
        // The body is neither read nor stored: destroying it frees the connection at once.
        res.destroy();
        resolve(res.statusCode ?? 0);
      },
    );
    // Read by the callbacks above, which run only after this line.
    const timer = setTimeout(() => req.destroy(new CallTimeout()), call.timeoutMs);
    req.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(body);
  });
}

export async function callWebhook(call: WebhookCall): Promise<CallResult> {
  const started = Date.now();
  const durationMs = () => Date.now() - started;
  let status: number;
  try {
    status = await post(call);
  } catch (error) {
    const cause = codeOf(error);
    return { ok: false, error: coarseOf(cause), cause, durationMs: durationMs() };
  }
  if (status >= 200 && status < 300) return { ok: true, status, durationMs: durationMs() };
  // A redirect could point anywhere (an internal address, say): it counts as a failure, never followed.
  return { ok: false, status, error: statusError(status), durationMs: durationMs() };
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^[A-Z0-9_]{1,64}$/.test(code) ? code : 'UNKNOWN';
}

function coarseOf(code: string): DeliveryError {
  if (code === 'TALLY_CALL_TIMEOUT' || code === 'ETIMEDOUT') return 'timeout';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'connection_reset';
  if (TLS_ERROR_CODE.test(code)) return 'tls_error';
  return 'network_error';
}

/** The failure label of a try that did not deliver (tally_webhook_delivery_failures_total). */
export function failureReason(r: CallResult): 'timeout' | 'network' | 'status_5xx' | 'status_4xx' | 'redirect' {
  if (r.status === undefined) return r.error === 'timeout' ? 'timeout' : 'network';
  if (r.status >= 500) return 'status_5xx';
  if (r.status >= 400) return 'status_4xx';
  return 'redirect';
}
