// The run's trace: one line per scheduler step (and per notable fact), hashed as it goes.
// The same seed must give the same trace byte for byte; the hash proves it cheaply, and the
// lines themselves are kept only when a failure is being reproduced.
import { createHash, type Hash } from 'node:crypto';

export class Trace {
  private readonly hash: Hash = createHash('sha256');
  private readonly kept: string[] | undefined;
  private readonly tail: string[] = [];
  private lineCount = 0;

  constructor(
    /** Keep every line (to print a reproduction); otherwise only the last `tailMax`. */
    keepAll: boolean,
    private readonly tailMax = 200,
  ) {
    this.kept = keepAll ? [] : undefined;
  }

  record(line: string): void {
    this.hash.update(line);
    this.hash.update('\n');
    this.lineCount++;
    if (this.kept) this.kept.push(line);
    this.tail.push(line);
    if (this.tail.length > this.tailMax * 2) this.tail.splice(0, this.tail.length - this.tailMax);
  }

  get lines(): number {
    return this.lineCount;
  }

  /** Every line, when they were kept; else the last ones. */
  text(): string[] {
    return this.kept ?? this.tail.slice(-this.tailMax);
  }

  digest(): string {
    return this.hash.copy().digest('hex');
  }
}
