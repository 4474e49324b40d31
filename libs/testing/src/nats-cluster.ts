// Three real nats-server processes on loopback as one JetStream cluster, each with its own
// client port, route port and temp store, for tests and benchmarks that need R3 streams and
// a leader to kill. A node keeps its ports and store across a restart, as a crashed server
// that comes back does.
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { freePort, PrivateNatsServer } from './nats-server.js';

const CLUSTER_NAME = 'tally-test';
/** Every JetStream API call made while the cluster settles waits at most this long. */
const API_TIMEOUT_MS = 3_000;

export interface ClusterNode {
  /** The server_name JetStream reports as a stream's leader. */
  readonly name: string;
  readonly server: PrivateNatsServer;
}

export class NatsCluster {
  private constructor(readonly nodes: readonly ClusterNode[]) {}

  /** Starts `size` nodes (3 by default) and waits until JetStream answers with a meta leader. */
  static async start(size = 3, readyTimeoutMs = 60_000): Promise<NatsCluster> {
    const routePorts = await Promise.all(Array.from({ length: size }, () => freePort()));
    const names = routePorts.map((_, i) => `tally-n${i + 1}`);
    const started = await Promise.allSettled(
      routePorts.map((port, i) => PrivateNatsServer.start({ config: nodeConfig(names[i]!, port, routePorts) })),
    );
    const servers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const cluster = new NatsCluster(servers.map((server, i) => ({ name: names[i]!, server })));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    try {
      if (failed) throw failed.reason;
      await cluster.waitJetStream(readyTimeoutMs);
      return cluster;
    } catch (error) {
      await cluster.dispose();
      throw error;
    }
  }

  /** Every node's client URL, comma-separated, as Tally's nats.url takes a server list. */
  get url(): string {
    return this.nodes.map((n) => n.server.url).join(',');
  }

  get servers(): string[] {
    return this.nodes.map((n) => n.server.url);
  }

  node(name: string): ClusterNode {
    const node = this.nodes.find((n) => n.name === name);
    if (!node) throw new Error(`no cluster node named ${name}`);
    return node;
  }

  /** The server_name of the stream's leader, or undefined while it has none (an election). */
  async leaderOf(stream: string): Promise<string | undefined> {
    const nc = await connect({ servers: this.servers, timeout: API_TIMEOUT_MS });
    try {
      const jsm = await jetstreamManager(nc, { timeout: API_TIMEOUT_MS });
      const info = await jsm.streams.info(stream);
      return info.cluster?.leader || undefined;
    } finally {
      await nc.close();
    }
  }

  /** Waits until JetStream answers an account info request, which needs an elected meta leader. */
  async waitJetStream(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    while (Date.now() < deadline) {
      try {
        const nc = await connect({ servers: this.servers, timeout: API_TIMEOUT_MS });
        try {
          const jsm = await jetstreamManager(nc, { timeout: API_TIMEOUT_MS });
          await jsm.getAccountInfo();
          return;
        } finally {
          await nc.close();
        }
      } catch (error) {
        last = error;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(
      `the JetStream cluster did not answer within ${timeoutMs} ms: ${String(last)}\n` +
        this.nodes.map((n) => `--- ${n.name}\n${n.server.logs().slice(-3_000)}`).join('\n'),
    );
  }

  /** Stops every node and deletes every store; safe to call twice and after a partial start. */
  async dispose(): Promise<void> {
    await Promise.allSettled(this.nodes.map((n) => n.server.dispose()));
  }
}

/** One node's config: its name, its route listener, and routes to every node (its own is ignored). */
function nodeConfig(name: string, routePort: number, routePorts: readonly number[]): string {
  const routes = routePorts.map((p) => `nats-route://127.0.0.1:${p}`).join(', ');
  return [
    `server_name: ${name}`,
    `cluster {`,
    `  name: ${CLUSTER_NAME}`,
    `  listen: 127.0.0.1:${routePort}`,
    `  routes: [${routes}]`,
    `}`,
    '',
  ].join('\n');
}
