// A projector in its own process, so the exactly-once test can kill it for real.
// Usage: node --import ./tools/register.mjs libs/platform/typeorm/test/projector-child.ts '<json>'
// With `stallAtBatch` it announces "MID-BATCH <first>-<last>" once that batch's rows are
// written but not committed, then hangs until it is killed; otherwise it catches up,
// prints "DONE <checkpoint>" and exits.
import { jetstream } from '@nats-io/jetstream';
import { connectNats } from '@tally/platform-jetstream';
import { openDataSource } from '../src/index.js';
import { counterProjection } from './counter.projection.js';
import { counterRunner, dataSourceOptions, type DatabaseLocation } from './fixtures.js';

interface ChildArgs {
  readonly natsUrl: string;
  readonly stream: string;
  readonly filterSubject: string;
  readonly database: DatabaseLocation;
  readonly batchSizeMax: number;
  readonly stallAtBatch?: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as ChildArgs;
const nc = await connectNats({
  url: args.natsUrl,
  name: 'projector-child',
  connectTimeoutMs: 5000,
  maxReconnectAttempts: 10,
  reconnectTimeWaitMs: 100,
});
const dataSource = await openDataSource(dataSourceOptions(args.database));
let batches = 0;
const projection = counterProjection(args.stream, args.filterSubject, {
  async afterWrite(events) {
    batches++;
    if (batches !== args.stallAtBatch) return;
    process.stdout.write(`MID-BATCH ${events[0]!.sequence}-${events[events.length - 1]!.sequence}\n`);
    // Hold the transaction open until the parent kills this process.
    await new Promise((resolve) => setTimeout(resolve, 600_000));
  },
});
const runner = counterRunner(jetstream(nc), dataSource, projection, { batchSizeMax: args.batchSizeMax });
const result = await runner.catchUp();
process.stdout.write(`DONE ${result.checkpoint}\n`);
await dataSource.destroy();
await nc.drain();
