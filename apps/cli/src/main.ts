// The `tally` command line: local stack, replay, audit and verification.
import { up } from './up.command.js';

const USAGE = `usage: tally <command>

  up                       run the local stack: NATS (started if needed) and both services
  replay [--service NAME] [--verify]
                           rebuild projections from the streams, with a progress bar;
                           --verify rebuilds into a scratch database and compares digests
  migrate                  move existing streams to this release's policy, then apply
                           pending projection-schema migrations
  help                     this text
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  switch (command) {
    case 'up':
      return up({ root: process.cwd(), env: process.env, readyTimeoutMs: 60_000 });
    case 'replay': {
      const { replay } = await import('./replay.command.js');
      return replay(args);
    }
    case 'migrate': {
      const { migrate } = await import('./migrate.command.js');
      return migrate();
    }
    case undefined:
    case 'help':
    case '--help':
      process.stdout.write(USAGE);
      return 0;
    default:
      process.stderr.write(`unknown command ${command}\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`tally: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
