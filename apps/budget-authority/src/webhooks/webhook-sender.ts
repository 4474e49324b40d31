// One webhook call, the Standard Webhooks way (the standardwebhooks package signs it): a POST
// with webhook-id, webhook-timestamp (this attempt's, in Unix seconds) and webhook-signature,
// bounded by a timeout, never following a redirect, and never reading the answer's body.
import { Webhook } from 'standardwebhooks';

export interface CallResult {
  readonly ok: boolean;
  readonly status?: number;
  /** Why it failed, in a few words; no response body, no URL. */
  readonly error?: string;
  readonly durationMs: number;
}

export interface WebhookCall {
  readonly url: string;
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

export async function callWebhook(call: WebhookCall): Promise<CallResult> {
  const started = Date.now();
  const durationMs = () => Date.now() - started;
  let res: Response;
  try {
    res = await fetch(call.url, {
      method: 'POST',
      headers: signedHeaders(call),
      body: call.body,
      // A redirect could point anywhere (an internal address, say): it counts as a failure.
      redirect: 'manual',
      signal: AbortSignal.timeout(call.timeoutMs),
    });
  } catch (error) {
    return { ok: false, error: describe(error, call.timeoutMs), durationMs: durationMs() };
  }
  // The body is neither read nor stored: cancel it so the connection is freed at once.
  await res.body?.cancel().catch(() => undefined);
  const status = res.status;
  if (status >= 200 && status < 300) return { ok: true, status, durationMs: durationMs() };
  const error = status >= 300 && status < 400 ? `redirect ${status} not followed` : `status ${status}`;
  return { ok: false, status, error, durationMs: durationMs() };
}

function describe(error: unknown, timeoutMs: number): string {
  const e = error as { name?: string; cause?: { code?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `timeout after ${timeoutMs} ms`;
  const code = e.cause?.code;
  return code ? `connection failed: ${code}` : 'connection failed';
}

/** The failure label of a try that did not deliver (tally_webhook_delivery_failures_total). */
export function failureReason(r: CallResult): 'timeout' | 'network' | 'status_5xx' | 'status_4xx' | 'redirect' {
  if (r.status === undefined) return r.error?.startsWith('timeout') ? 'timeout' : 'network';
  if (r.status >= 500) return 'status_5xx';
  if (r.status >= 400) return 'status_4xx';
  return 'redirect';
}
