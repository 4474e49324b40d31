// `tally provision`: the operator step that puts on the NATS server everything the services
// need (ADR 0015): every stream with its policy, the durable consumers and the KV buckets,
// created when missing and moved in place when they differ, never losing a message. The
// migrations Job runs it before a release rolls out; services that boot with
// nats.provision: check then only read it. It logs in as the operator user.
import { loadConfig, provisionTopology, tallyTopology } from '@tally/platform-app';
import { StreamConfigConflict } from '@tally/platform-jetstream';
import { tallyNames } from '@tally/contracts';
import { CliError, ExitCode } from './cli/exit-codes.js';
import { connectOperatorNats } from './operator-nats.js';
import { jetstream } from '@nats-io/jetstream';

export async function provision(): Promise<number> {
  const config = loadConfig();
  const nats = await connectOperatorNats(config, 'tally-provision');
  try {
    const js = jetstream(nats.nc, { timeout: config.nats.publish_timeout_ms });
    const topology = tallyTopology(config, tallyNames(config.nats.namespace));
    await provisionTopology(js, nats.jsm, topology, (line) => process.stdout.write(`tally provision: ${line}\n`));
    return ExitCode.ok;
  } catch (error) {
    if (error instanceof StreamConfigConflict) throw new CliError(error.message, ExitCode.failed);
    throw error;
  } finally {
    await nats.close();
  }
}
