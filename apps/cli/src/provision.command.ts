// `tally provision`: the operator step that puts on the NATS server everything the services
// need (ADR 0015): every stream with its policy, the durable consumers and the KV buckets,
// created when missing and moved in place when they differ, never losing a message. The
// migrations Job runs it before a release rolls out; services that boot with
// nats.provision: check then only read it. It logs in as the operator user.
import { loadConfig, provisionTopology, retiredBucketsPresent, tallyTopology } from '@tally/platform-app';
import { StreamConfigConflict } from '@tally/platform-jetstream';
import { tallyNames } from '@tally/contracts';
import { CliError, ExitCode } from './cli/exit-codes.js';
import { connectOperatorNats } from './operator-nats.js';

export async function provision(): Promise<number> {
  const config = loadConfig();
  const nats = await connectOperatorNats(config, 'tally-provision');
  try {
    const names = tallyNames(config.nats.namespace);
    const say = (line: string) => process.stdout.write(`tally provision: ${line}\n`);
    await provisionTopology(nats.jsm, tallyTopology(config, names), say);
    for (const bucket of await retiredBucketsPresent(nats.jsm, names))
      say(
        `KV bucket ${bucket} is no longer used (ADR 0051): ` +
          `delete it once no replica of an earlier release runs (nats kv del ${bucket})`,
      );
    return ExitCode.ok;
  } catch (error) {
    if (error instanceof StreamConfigConflict) throw new CliError(error.message, ExitCode.failed);
    throw error;
  } finally {
    await nats.close();
  }
}
