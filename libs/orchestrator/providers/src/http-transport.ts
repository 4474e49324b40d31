// Keep-alive HTTP(S) transport with explicit connection limits. It uses node:http agents
// rather than global fetch because fetch's dispatcher (undici's Agent) is not importable from
// Node without the undici package, so its limits could not be set; node:http also exposes
// socket error codes directly, which the failure classification needs.
import http from 'node:http';
import https from 'node:https';

export interface ConnectionLimits {
  /** Concurrent sockets per provider origin; must exceed the in-flight dispatches per process. */
  socketsPerOriginMax: number;
  /** Concurrent sockets across all origins. */
  socketsTotalMax: number;
  /** Idle keep-alive sockets kept per origin. */
  freeSocketsPerOriginMax: number;
  /**
   * Idle keep-alive sockets are closed after this long. It should stay below the providers'
   * own keep-alive timeout, so we never write on a socket the server is closing.
   */
  freeSocketTimeoutMs: number;
}

export class HttpTransport {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(limits: ConnectionLimits) {
    for (const [name, value] of Object.entries(limits)) {
      if (!Number.isInteger(value) || value < 1) throw new Error(`HttpTransport: ${name} must be a positive integer`);
    }
    const options: http.AgentOptions = {
      keepAlive: true,
      maxSockets: limits.socketsPerOriginMax,
      maxTotalSockets: limits.socketsTotalMax,
      maxFreeSockets: limits.freeSocketsPerOriginMax,
      timeout: limits.freeSocketTimeoutMs,
      // LIFO reuses the warmest sockets and lets the cold ones expire.
      scheduling: 'lifo',
    };
    this.httpAgent = new http.Agent(options);
    this.httpsAgent = new https.Agent(options);
  }

  /**
   * Sends a POST and resolves with the response once its headers arrive; the body is left to
   * the caller. Aborting `signal` destroys the request and, later, the response stream.
   */
  post(url: URL, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<http.IncomingMessage> {
    const secure = url.protocol === 'https:';
    const request = secure ? https.request : http.request;
    return new Promise((resolve, reject) => {
      const req = request(url, {
        method: 'POST',
        agent: secure ? this.httpsAgent : this.httpAgent,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        signal,
      });
      // 'on', not 'once': a socket can fail again after the response started, and an
      // unhandled 'error' would crash the worker. Rejecting a settled promise is a no-op.
      req.on('error', reject);
      req.once('response', (res) => {
        // A late abort must also end the body stream the caller is iterating.
        const onAbort = (): void => {
          res.destroy(abortError(signal));
        };
        signal.addEventListener('abort', onAbort, { once: true });
        res.once('close', () => signal.removeEventListener('abort', onAbort));
        resolve(res);
      });
      req.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

function abortError(signal: AbortSignal): Error {
  const error = new Error('request aborted', { cause: signal.reason });
  error.name = 'AbortError';
  return error;
}

/** Reads at most maxBytes of a body (error bodies are only for the record) and never throws. */
export async function readBodyBounded(res: http.IncomingMessage, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res) {
      const buffer = chunk as Buffer;
      chunks.push(buffer.subarray(0, Math.max(0, maxBytes - size)));
      size += buffer.length;
      if (size >= maxBytes) break;
    }
  } catch {
    // The status already classifies the failure; a broken error body only shortens the detail.
  }
  res.destroy();
  return Buffer.concat(chunks).toString('utf8');
}
