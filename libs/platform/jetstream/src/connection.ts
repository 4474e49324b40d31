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
  });
}
