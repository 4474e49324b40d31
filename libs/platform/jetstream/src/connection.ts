// One NATS connection per process, with explicit timeouts and reconnect bounds.
import { connect, type NatsConnection } from '@nats-io/transport-node';

export interface NatsConnectionOptions {
  readonly url: string;
  readonly name: string;
  readonly connectTimeoutMs: number;
  /** -1 keeps reconnecting forever: a service should ride out a NATS restart. */
  readonly maxReconnectAttempts: number;
  readonly reconnectTimeWaitMs: number;
}

export async function connectNats(options: NatsConnectionOptions): Promise<NatsConnection> {
  return connect({
    servers: options.url,
    name: options.name,
    timeout: options.connectTimeoutMs,
    maxReconnectAttempts: options.maxReconnectAttempts,
    reconnectTimeWait: options.reconnectTimeWaitMs,
    waitOnFirstConnect: false,
    // Without this every request (each JetStream publish and direct get) builds an Error up
    // front to carry its call site; profiles of the authority showed ~10% of CPU there. A
    // failed request still says which subject and why, only without the caller's stack.
    noAsyncTraces: true,
  });
}

/** The server list of a NATS URL setting (comma-separated), each without user, password or token. */
export function redactedServers(url: string): string[] {
  return url
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean)
    .map((u) => u.replace(/^([a-z]+:\/\/)[^@/]*@/i, '$1'));
}
