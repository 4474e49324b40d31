// The projection worker thread: its own NATS connection, database connection and event
// loop, running the service's projections under the same lease as before. It tells the
// main thread every checkpoint it commits (so requests waiting to read their own write
// wake at once) and its status; it stops when told to.
// Reflect.metadata must exist before the first decorated class is defined; compiled, no loader imports it.
import 'reflect-metadata';
import { parentPort, workerData } from 'node:worker_threads';
import { tallyNames } from '@tally/contracts';
import { connectNats } from '@tally/platform-jetstream';
import { jetstream } from '@nats-io/jetstream';
import { loadConfig } from './config.loader.js';
import { natsConnectionOptionsOf, serviceInboxPrefix } from './nats-runtime.js';
import { JsonLogger } from './json-logger.js';
import { startTracing } from './tracing.js';
import { quarantineEntryOf } from '@tally/platform-typeorm';
import { PROJECTION_HOST_LIMITS, ProjectionHost } from './projection-host.js';
import { ProjectionLease } from './projection-lease.js';
import { importProjector } from './projector.js';
import { leaseBucketName, openServiceDatabase, projectorLeaseKey, PROJECTOR_LEASE_TTL_MS } from './service-database.js';
import type { FromProjectionThread, ProjectionThreadData, ToProjectionThread } from './projection-thread.js';

const port = parentPort!;
const data = workerData as ProjectionThreadData;
const post = (message: FromProjectionThread) => port.postMessage(message);

async function main(): Promise<void> {
  // The environment is the main thread's, so this is the configuration it validated.
  const config = loadConfig();
  const logger = new JsonLogger(data.service, config.log_level);
  // The thread has its own tracer provider: the projection spans are exported from here.
  const tracing = await startTracing(config.tracing, data.service, data.instanceId);
  const names = tallyNames(config.nats.namespace);
  const projector = await importProjector(data.projectorUrl);
  const nc = await connectNats(
    natsConnectionOptionsOf(config, `${data.service}-projector`, serviceInboxPrefix(data.service)),
  );
  const js = jetstream(nc, { timeout: config.nats.publish_timeout_ms });
  const dataSource = await openServiceDatabase(config, projector.database);
  const lease = await ProjectionLease.open({
    js,
    bucket: leaseBucketName(names.namespace),
    key: projectorLeaseKey(data.service),
    holderId: data.instanceId,
    ttlMs: PROJECTOR_LEASE_TTL_MS,
    replicas: config.streams.replicas,
  });
  const host = new ProjectionHost({
    ...PROJECTION_HOST_LIMITS,
    js,
    dataSource,
    specs: projector.specs({ config, names, logger }),
    lease,
    logger,
    onCommitted: (projection, checkpoint) => post({ kind: 'committed', projection, checkpoint }),
    // Posted before the checkpoint past the event, so no read that waited for it is answered from stale rows.
    onQuarantined: (row) => post({ kind: 'quarantined', entry: quarantineEntryOf(row) }),
  });
  await host.start();
  const status = setInterval(() => post({ kind: 'status', ...host.status() }), PROJECTION_HOST_LIMITS.leaseRenewMs);
  post({ kind: 'started', ...host.status() });
  port.on('message', (message: ToProjectionThread) => {
    if (message.kind !== 'stop') return;
    clearInterval(status);
    void (async () => {
      await host.stop();
      await dataSource.destroy();
      await nc.drain();
      await tracing.shutdown().catch(() => undefined);
      post({ kind: 'stopped' });
      port.close();
    })();
  });
}

main().catch((error: unknown) => {
  post({ kind: 'failed', error: error instanceof Error ? error.message : String(error) });
  // Ends this thread only; the main thread decides what happens next.
  process.exit(1);
});
