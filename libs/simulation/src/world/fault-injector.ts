// The faults that strike the system as a whole, on a tick of about a virtual second: a
// replica killed mid-step and restarted from the stream a little later, the clock jumping
// to just before or after a period boundary or an uncaptured hold's expiry, the budget
// stream refusing appends for a while as a full stream does, and callers aborting units.
import type { Clients } from './clients.js';
import type { World } from './world.js';

const TICK_MS = 1_000;
/** How close to a boundary a jump lands, either side. */
const NEAR_MS = 150;

export class FaultInjector {
  private stopped = false;

  constructor(
    private readonly world: World,
    private readonly clients: Clients,
  ) {}

  start(): void {
    const w = this.world;
    const run = async () => {
      while (!this.stopped) {
        await w.scheduler.sleep(undefined, w.rng.faults.latency(TICK_MS), undefined, 'fault tick');
        if (this.stopped) return;
        if (w.faults.strikes('kill')) this.killOne();
        if (w.faults.strikes('clock_jump')) this.jump();
        if (w.faults.strikes('stream_full')) this.fillStream();
        if (w.faults.strikes('abort')) this.clients.abortOne();
      }
    };
    void run();
  }

  /** The quiet tail: no more faults, every replica up, the stream writable again. */
  heal(): void {
    this.stopped = true;
    this.world.budgetStream.full = false;
    for (const replica of [...this.world.authorities, ...this.world.orchestrators])
      if (!replica.owner.alive) replica.start();
  }

  private killOne(): void {
    const w = this.world;
    const live = [...w.authorities, ...w.orchestrators].filter((r) => r.owner.alive);
    if (live.length === 0) return;
    const victim = w.rng.faults.pick(live);
    victim.kill();
    const downMs = 200 + w.rng.faults.int(5_000);
    w.scheduler.at(downMs, `restart after ${downMs}ms`, undefined, () => {
      if (!victim.owner.alive) victim.start();
    });
  }

  private jump(): void {
    const w = this.world;
    const now = w.scheduler.nowMs;
    const targets: number[] = [];
    for (const tree of w.shape.trees) {
      const reset = tree.llm.reset;
      if (reset && 'period_seconds' in reset) {
        const lengthMs = reset.period_seconds * 1000;
        targets.push(Math.ceil(now / lengthMs) * lengthMs);
      }
    }
    let expiry = Number.POSITIVE_INFINITY;
    for (const hold of w.checker.shadow.authorized) expiry = Math.min(expiry, hold.expires_at_ms);
    if (Number.isFinite(expiry)) targets.push(expiry);
    const target =
      targets.length > 0 && w.rng.faults.chance(0.8)
        ? w.rng.faults.pick(targets)
        : now + 1_000 + w.rng.faults.int(30_000);
    const landing = target + w.rng.faults.range(-NEAR_MS, NEAR_MS);
    if (landing <= now) return;
    w.note(`clock jumps ${landing - now}ms`);
    w.scheduler.jump(landing - now);
  }

  private fillStream(): void {
    const w = this.world;
    const forMs = 200 + w.rng.faults.int(3_000);
    w.budgetStream.full = true;
    w.note(`budget stream full for ${forMs}ms`);
    w.scheduler.at(forMs, 'budget stream writable again', undefined, () => void (w.budgetStream.full = false));
  }
}
