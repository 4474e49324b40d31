// A request to a simulated server: it travels for a network latency, the server acts on it
// at once (a step of its own), and the answer travels back (another step). A request on the
// wire still reaches the server when its caller dies; only the answer is then lost.
import type { Prng } from './prng.js';
import type { Owner, Scheduler } from './scheduler.js';

export interface Wire {
  readonly scheduler: Scheduler;
  readonly latency: Prng;
  readonly latencyMs: number;
}

export function remoteCall<T>(wire: Wire, owner: Owner, label: string, serve: () => T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    wire.scheduler.at(
      wire.latency.latency(wire.latencyMs),
      `${label} ->`,
      owner,
      () => {
        let answer: { ok: true; value: T } | { ok: false; error: unknown };
        try {
          answer = { ok: true, value: serve() };
        } catch (error) {
          answer = { ok: false, error };
        }
        wire.scheduler.at(wire.latency.latency(wire.latencyMs), `${label} <- ${summary(answer)}`, owner, () =>
          answer.ok ? resolve(answer.value) : reject(answer.error),
        );
      },
      true,
    );
  });
}

function summary(answer: { ok: true; value: unknown } | { ok: false; error: unknown }): string {
  if (!answer.ok) return `! ${(answer.error as Error)?.message ?? 'error'}`;
  const value = answer.value as { outcome?: unknown; state?: unknown } | undefined;
  return String(value?.outcome ?? value?.state ?? 'ok');
}
