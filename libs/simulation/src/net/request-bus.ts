// Core NATS request/reply between the services (ADR 0025), simulated: a request goes to one
// live member of the authority's queue group after a latency, its handler runs on that
// replica, and the reply travels back. Requests and replies get lost, requests arrive twice,
// and a replica that dies never answers. The caller's side is the CommandSender port, with
// the core client's retry rules: a lost reply is re-sent at once, no responders and an
// `unavailable` answer after a pause, and when the attempts are used up: CommandTimeout.
import type { CommandService, TallyNames } from '@tally/contracts';
import { CommandTimeout, type CommandReply, type CommandSender, type SendOptions } from '@tally/platform-nest';
import type { Prng } from '../core/prng.js';
import type { Owner, Scheduler } from '../core/scheduler.js';
import type { Faults } from '../world/faults.js';

export type CommandHandler = (command: string, commandId: string, payload: unknown) => Promise<CommandReply<unknown>>;

export interface Responder {
  readonly owner: Owner;
  readonly handle: CommandHandler;
}

export interface BusNetwork {
  readonly scheduler: Scheduler;
  readonly latency: Prng;
  readonly faults: Faults;
  readonly latencyMs: number;
}

export class RequestBus {
  private readonly responders: Responder[] = [];
  /** The first final answer each command id got, as its caller received it: every later one must be the same. */
  private readonly answers = new Map<string, string>();
  /** Command ids a caller got a stream_full refusal for: a refusal it takes as final. */
  readonly refusedFull = new Set<string>();

  constructor(
    readonly net: BusNetwork,
    private readonly violation: (detail: string) => void,
  ) {}

  /** Every command is idempotent by its command id: a re-sent one gets the original answer, byte for byte. */
  answered(command: string, commandId: string, reply: CommandReply<unknown>, text: string): void {
    // Neither answer is kept by the ledger: `unavailable` decided nothing, and a full stream stored nothing of
    // the write it refused, so the same command id runs again once the stream has room.
    if (!reply.ok && reply.error.type === 'rejected' && reply.error.reason === 'stream_full')
      this.refusedFull.add(commandId);
    if (
      !reply.ok &&
      (reply.error.type === 'unavailable' || (reply.error.type === 'rejected' && reply.error.reason === 'stream_full'))
    )
      return;
    const key = `${command} ${commandId}`;
    const first = this.answers.get(key);
    if (first === undefined) this.answers.set(key, text);
    else if (first !== text)
      this.violation(`${key} was answered twice, differently: ${first.slice(0, 400)} then ${text.slice(0, 400)}`);
  }

  register(responder: Responder): void {
    this.responders.push(responder);
  }

  unregister(owner: Owner): void {
    const index = this.responders.findIndex((r) => r.owner === owner);
    if (index >= 0) this.responders.splice(index, 1);
  }

  live(): readonly Responder[] {
    return this.responders.filter((r) => r.owner.alive);
  }
}

type Attempt =
  { readonly kind: 'reply'; readonly reply: CommandReply<unknown> } | { readonly kind: 'timeout' | 'none' };

export class SimCommandSender implements CommandSender {
  constructor(
    private readonly bus: RequestBus,
    private readonly owner: Owner,
    private readonly names: TallyNames,
    /** The core client's pause before a re-send when nobody took the request. */
    private readonly retryDelayMs: number,
  ) {}

  async send<TReply>(
    service: CommandService,
    command: string,
    commandId: string,
    payload: unknown,
    options: SendOptions,
  ): Promise<CommandReply<TReply>> {
    const net = this.bus.net;
    const subject = this.names.requestSubject(service, command);
    const started = net.scheduler.nowMs;
    const wire = JSON.stringify(payload ?? null);
    for (let attempt = 1; attempt <= options.attemptsMax; attempt++) {
      const outcome = await this.attempt(command, commandId, wire, options.timeoutMs);
      if (outcome.kind === 'reply') {
        // The reply as its bytes arrive: JSON, as the core server encodes it.
        const text = JSON.stringify(outcome.reply);
        this.bus.answered(command, commandId, outcome.reply, text);
        const reply = JSON.parse(text) as CommandReply<TReply>;
        if (reply.ok || reply.error.type !== 'unavailable') return reply;
      }
      const pause = outcome.kind !== 'timeout';
      if (pause && attempt < options.attemptsMax && this.retryDelayMs > 0)
        await net.scheduler.sleep(this.owner, this.retryDelayMs, undefined, `pause ${commandId}`);
    }
    throw new CommandTimeout(subject, commandId, options.attemptsMax, net.scheduler.nowMs - started);
  }

  async close(): Promise<void> {}

  /** One request: the first reply to arrive, or a timeout; `none` when no replica is there to take it. */
  private attempt(command: string, commandId: string, wire: string, timeoutMs: number): Promise<Attempt> {
    const net = this.bus.net;
    const responders = this.bus.live();
    if (responders.length === 0) return Promise.resolve({ kind: 'none' });
    const target = net.latency.pick(responders);
    const lost = net.faults.strikes('request_loss');
    const twice = net.faults.strikes('request_duplicate');
    return new Promise<Attempt>((resolve) => {
      let done = false;
      const finish = (outcome: Attempt) => {
        if (done) return;
        done = true;
        timer.cancel();
        resolve(outcome);
      };
      const timer = net.scheduler.at(
        timeoutMs,
        `${this.owner.name} ${command} ${commandId} timed out`,
        this.owner,
        () => finish({ kind: 'timeout' }),
      );
      const lostReply = lost && net.faults.draw.chance(0.5);
      this.deliver(target, command, commandId, wire, lost && !lostReply, lostReply, finish);
      if (twice) {
        const other = net.latency.pick(this.bus.live());
        this.deliver(other, command, commandId, wire, false, false, finish);
      }
    });
  }

  private deliver(
    target: Responder,
    command: string,
    commandId: string,
    wire: string,
    lostRequest: boolean,
    lostReply: boolean,
    finish: (outcome: Attempt) => void,
  ): void {
    const net = this.bus.net;
    const label = `${this.owner.name} -> ${target.owner.name} ${command} ${commandId}`;
    const arrive = () => {
      if (lostRequest || !target.owner.alive) return;
      void target.handle(command, commandId, JSON.parse(wire)).then((reply) => {
        // A replica that died while its handler ran sends nothing.
        if (!target.owner.alive) return;
        const back = `${target.owner.name} -> ${this.owner.name} reply ${commandId} ${describe(reply)}`;
        net.scheduler.at(net.latency.latency(net.latencyMs), back, this.owner, () => {
          if (!lostReply) finish({ kind: 'reply', reply });
        });
      });
    };
    net.scheduler.at(net.latency.latency(net.latencyMs), label, this.owner, arrive, true);
  }
}

function describe(reply: CommandReply<unknown>): string {
  if (!reply.ok) return `${reply.error.type}`;
  const value = reply.value as { verdict?: unknown; receipt?: { verdict?: unknown } } | null;
  return String(value?.verdict ?? value?.receipt?.verdict ?? 'ok');
}
