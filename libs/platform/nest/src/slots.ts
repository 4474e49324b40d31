// A counting semaphore: bounds how many commands one replica handles at once.
export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(capacity: number) {
    if (!(capacity >= 1)) throw new Error('capacity must be at least 1');
    this.free = capacity;
  }

  acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}
