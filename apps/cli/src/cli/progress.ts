// Progress bars on stderr (cli-progress): redrawn in place on a terminal, and in a log (CI,
// a pipe) one line every couple of seconds plus the last one, so long work always shows
// that it is moving and stdout stays clean for the command's output.
import cliProgress from 'cli-progress';

export interface Progress {
  update(done: number, total: number): void;
  /** Draws the final state; `note` follows on its own line. */
  finish(note?: string): void;
}

export interface ProgressOptions {
  readonly unit: string;
  readonly stream?: NodeJS.WriteStream;
  /** How often a non-terminal gets a line. */
  readonly logEveryMs?: number;
}

export function progressBar(label: string, options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr;
  const started = Date.now();
  const bar = new cliProgress.SingleBar({
    stream,
    format: `${label.padEnd(28)} [{bar}] {percentage}% {value}/{total} ${options.unit} {rate}/s`,
    barCompleteChar: '#',
    barIncompleteChar: '.',
    barsize: 30,
    hideCursor: false,
    noTTYOutput: true,
    notTTYSchedule: options.logEveryMs ?? 2_000,
    gracefulExit: true,
  });
  let startedBar = false;
  const rate = (done: number) => Math.round(done / Math.max(0.001, (Date.now() - started) / 1000));
  return {
    update(done, total) {
      if (!startedBar) {
        bar.start(Math.max(total, 0), done, { rate: rate(done) });
        startedBar = true;
        return;
      }
      bar.setTotal(Math.max(total, 0));
      bar.update(done, { rate: rate(done) });
    },
    finish(note = '') {
      if (startedBar) bar.stop();
      if (note) stream.write(`${label.padEnd(28)} ${note}\n`);
    },
  };
}
