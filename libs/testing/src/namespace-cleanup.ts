// Deletes every stream (and KV bucket) of a test namespace, so tests that run whole
// services leave the shared NATS server as they found it.
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';

export async function deleteNamespaceStreams(natsUrl: string, namespace: string): Promise<number> {
  const prefix = namespace.toUpperCase().replace(/-/g, '_') + '_';
  const nc = await connect({ servers: natsUrl, timeout: 5_000 });
  try {
    const jsm = await jetstreamManager(nc);
    const doomed: string[] = [];
    for await (const stream of jsm.streams.list()) {
      const name = stream.config.name;
      if (name.startsWith(prefix) || name.startsWith(`KV_${prefix}`)) doomed.push(name);
    }
    for (const name of doomed) await jsm.streams.delete(name);
    return doomed.length;
  } finally {
    await nc.close();
  }
}
