// One replica's connection to a simulated stream: every append and load is a request that
// reaches the "server" after a network latency and is answered after another, each a
// scheduler step, so other replicas can commit and read in between. Faults strike here:
// a publish lost before the server, an acknowledgement lost after it, a load that times
// out, a load answered by a lagging replica. A replica that dies has its answers dropped;
// a publish already on the wire may still land.
import { AppendOutcomeUnknown, type AppendResult, type EventStore, type LoadResult } from '@tally/eventing';
import type { Prng } from '../core/prng.js';
import type { Owner, Scheduler } from '../core/scheduler.js';
import type { Faults } from '../world/faults.js';
import type { Messages, SimEventStore } from './sim-event-store.js';

export interface StoreNetwork {
  readonly scheduler: Scheduler;
  readonly latency: Prng;
  readonly faults: Faults;
  /** How long a caller waits for an answer that never comes (the publish and load timeouts). */
  readonly timeoutMs: number;
  readonly latencyMs: number;
}

type Answer<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

export class ScheduledEventStore implements EventStore {
  constructor(
    private readonly sim: SimEventStore,
    private readonly net: StoreNetwork,
    private readonly owner: Owner,
    /** Told of each append this replica sees acknowledged, just before its caller is. */
    private readonly onAcknowledged?: (subject: string, events: Messages) => void,
  ) {}

  append(subject: string, events: Messages, expectedSequence: number): Promise<AppendResult> {
    let data: Uint8Array;
    try {
      data = this.sim.encode(events);
    } catch (error) {
      return Promise.reject(error);
    }
    const label = `${this.owner.name} append ${tail(subject)}@${expectedSequence} [${events.map((e) => short(e.eventId)).join(' ')}]`;
    const lostBefore = this.net.faults.strikes('lost_ack_before');
    const lostAfter = this.net.faults.strikes('lost_ack_after');
    return new Promise<AppendResult>((resolve, reject) => {
      const arrive = () => {
        // A dead replica's publish already on the wire lands or not, as the network has it.
        if (lostBefore || (!this.owner.alive && this.net.faults.draw.chance(0.5)))
          return this.unknown(label, subject, events, 'lost before the server', reject);
        const answer = attempt(() => this.sim.appendNow(subject, events, expectedSequence, data));
        if (lostAfter) return this.unknown(label, subject, events, 'stored, acknowledgement lost', reject);
        const acknowledged = (result: AppendResult) => {
          this.onAcknowledged?.(subject, events);
          resolve(result);
        };
        this.deliver(`${label} ${describe(answer)}`, answer, acknowledged, reject);
      };
      this.net.scheduler.at(this.net.latency.latency(this.net.latencyMs), `${label} ->`, this.owner, arrive, true);
    });
  }

  load(subject: string, afterSequence = 0): Promise<LoadResult> {
    const label = `${this.owner.name} load ${tail(subject)}>${afterSequence}`;
    const failed = this.net.faults.strikes('load_failure');
    const stale = this.net.faults.strikes('stale_read');
    return new Promise<LoadResult>((resolve, reject) => {
      const arrive = () => {
        if (failed) {
          const error = new Error(`load of ${subject} timed out`);
          this.net.scheduler.at(this.net.timeoutMs, `${label} timed out`, this.owner, () => reject(error));
          return;
        }
        const upTo = stale ? this.lagging(subject) : undefined;
        const answer = attempt(() => this.sim.loadNow(subject, afterSequence, upTo));
        this.deliver(
          `${label} ${upTo === undefined ? '' : `stale@${upTo} `}${describe(answer)}`,
          answer,
          resolve,
          reject,
        );
      };
      this.net.scheduler.at(this.net.latency.latency(this.net.latencyMs), `${label} ->`, this.owner, arrive);
    });
  }

  /** A lagging replica's view: the subject as it stood one or two of its commits ago. */
  private lagging(subject: string): number | undefined {
    const messages = this.sim.stream.subjectMessages(subject, 0);
    if (messages.length === 0) return undefined;
    const behind = 1 + this.net.faults.draw.int(2);
    return messages.length > behind ? messages[messages.length - 1 - behind]!.seq : 0;
  }

  private deliver<T>(label: string, answer: Answer<T>, resolve: (v: T) => void, reject: (e: unknown) => void): void {
    this.net.scheduler.at(this.net.latency.latency(this.net.latencyMs), label, this.owner, () =>
      answer.ok ? resolve(answer.value) : reject(answer.error),
    );
  }

  private unknown(label: string, subject: string, events: Messages, why: string, reject: (e: unknown) => void): void {
    const error = new AppendOutcomeUnknown(
      subject,
      events.map((e) => e.eventId),
      new Error(why),
    );
    this.net.scheduler.at(this.net.timeoutMs, `${label} ${why}`, this.owner, () => reject(error));
  }
}

function attempt<T>(run: () => T): Answer<T> {
  try {
    return { ok: true, value: run() };
  } catch (error) {
    return { ok: false, error };
  }
}

function describe(answer: Answer<AppendResult | LoadResult>): string {
  if (!answer.ok) return `! ${(answer.error as Error).name ?? 'Error'}`;
  const value = answer.value;
  if ('sequences' in value) return `= ${value.lastSequence}${value.duplicates[0] ? ' dup' : ''}`;
  return `= ${value.events.length} last ${value.lastSequence}`;
}

/** The aggregate part of a subject: enough to read a trace by. */
function tail(subject: string): string {
  return short(subject.slice(subject.lastIndexOf('.') + 1));
}

/** Capability ids are long hashes; their first characters tell them apart in a trace. */
export function short(id: string): string {
  return id.replace(/cap_([0-9a-f]{6})[0-9a-f]{18}/g, 'cap_$1').replace(/--([0-9a-f]{6})[0-9a-f]{18}/g, '--$1');
}
