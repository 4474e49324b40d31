// One NATS connection per process, with explicit timeouts and reconnect bounds, and the
// login (credentials, TLS) passed as options: nats.js v3 ignores credentials in a URL.
import type { Authenticator, TlsOptions } from '@nats-io/nats-core';
import { connect, type NatsConnection } from '@nats-io/transport-node';

/** How to log in. Built from config by the app layer; never logged. */
export interface NatsLogin {
  readonly user?: string;
  readonly pass?: string;
  readonly token?: string;
  /** NKey seed or creds (JWT) authenticator. */
  readonly authenticator?: Authenticator;
  readonly tls?: TlsOptions;
}

export interface NatsConnectionOptions {
  /** One URL or a comma-separated list, without credentials (use `login`). Ignored when `servers` is set. */
  readonly url?: string;
  readonly servers?: readonly string[];
  readonly login?: NatsLogin;
  /** Where this connection's inboxes live; a least-privilege user may subscribe only below its own. */
  readonly inboxPrefix?: string;
  readonly name: string;
  readonly connectTimeoutMs: number;
  /** -1 keeps reconnecting forever: a service should ride out a NATS restart. */
  readonly maxReconnectAttempts: number;
  readonly reconnectTimeWaitMs: number;
}

export async function connectNats(options: NatsConnectionOptions): Promise<NatsConnection> {
  const servers = options.servers ? [...options.servers] : splitServers(options.url ?? 'nats://127.0.0.1:4222');
  const login = options.login ?? {};
  return connect({
    servers,
    name: options.name,
    timeout: options.connectTimeoutMs,
    maxReconnectAttempts: options.maxReconnectAttempts,
    reconnectTimeWait: options.reconnectTimeWaitMs,
    waitOnFirstConnect: false,
    // Without this every request (each JetStream publish and direct get) builds an Error up
    // front to carry its call site; profiles of the authority showed ~10% of CPU there. A
    // failed request still says which subject and why, only without the caller's stack.
    noAsyncTraces: true,
    ...(login.user !== undefined ? { user: login.user, pass: login.pass } : {}),
    ...(login.token !== undefined ? { token: login.token } : {}),
    ...(login.authenticator ? { authenticator: login.authenticator } : {}),
    ...(login.tls ? { tls: login.tls } : {}),
    ...(options.inboxPrefix ? { inboxPrefix: options.inboxPrefix } : {}),
  });
}

function splitServers(url: string): string[] {
  return url
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
}

/** The server list of a NATS URL setting (comma-separated), each without user, password or token. */
export function redactedServers(url: string): string[] {
  return splitServers(url).map((u) => u.replace(/^([a-z]+:\/\/)[^@/]*@/i, '$1'));
}
