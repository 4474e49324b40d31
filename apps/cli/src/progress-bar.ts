// A progress bar on stderr: redrawn in place on a terminal, one line per 10% otherwise
// (CI logs), so a long replay always shows that it is moving.
export class ProgressBar {
  private lastDecile = -1;
  private readonly started = Date.now();

  constructor(
    private readonly label: string,
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly width = 30,
  ) {}

  update(done: number, total: number): void {
    const fraction = total > 0 ? Math.min(1, done / total) : 1;
    const seconds = Math.max(0.001, (Date.now() - this.started) / 1000);
    const rate = Math.round(done / seconds);
    const text = `${this.label.padEnd(28)} ${this.bar(fraction)} ${(fraction * 100).toFixed(0).padStart(3)}% ${done}/${total} events ${rate}/s`;
    if (this.stream.isTTY) {
      this.stream.write(`\r${text}`);
      return;
    }
    const decile = Math.floor(fraction * 10);
    if (decile > this.lastDecile) {
      this.lastDecile = decile;
      this.stream.write(`${text}\n`);
    }
  }

  finish(note = ''): void {
    if (this.stream.isTTY) this.stream.write('\n');
    if (note) this.stream.write(`${this.label.padEnd(28)} ${note}\n`);
  }

  private bar(fraction: number): string {
    const filled = Math.round(fraction * this.width);
    return `[${'#'.repeat(filled)}${'.'.repeat(this.width - filled)}]`;
  }
}
