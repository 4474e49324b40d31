// The callers of the system during the fault phase: an API client submitting work units
// (re-sent until the submission is acknowledged, then queued with their token), direct tool
// callers running Admit, sometimes Increase, and Settle over core requests as an MCP gateway
// does (re-sending a command id until it is answered, replaying a request id now and then),
// and callers aborting their units. A hold whose caller gave up is exempt from the liveness
// check: nobody is left to settle it, and a captured hold never expires (B20).
import { createHash } from 'node:crypto';
import { holdId } from '@tally/budget-domain';
import { WorkUnits, WorkUnitRepository } from '@tally/orchestrator-application';
import { SimCommandSender } from '../net/request-bus.js';
import { WORK_MARK } from '../ports/sim-provider.js';
import { ScheduledEventStore } from '../store/scheduled-event-store.js';
import type { IssuedTree } from './setup.js';
import type { World } from './world.js';

/** Rounds of re-sending one command id (each round is the port's own attempts) before a caller gives up. */
const ROUNDS_MAX = 12;
const SEND = { timeoutMs: 5_000, attemptsMax: 3 };

interface AdmitReply {
  readonly verdict?: string;
  readonly dispatch?: boolean;
  readonly hold_id?: string;
  readonly execution_nonce?: string;
  readonly admission_proof?: { claims: Record<string, unknown>; key_id: string; signature: string };
}

export class Clients {
  stopped = false;
  busy = 0;
  submitted = 0;
  directCalls = 0;
  /** Holds whose caller gave up before settling them. */
  readonly exempt = new Set<string>();
  private readonly units: WorkUnits;
  private readonly sender: SimCommandSender;
  private aborts = 0;

  constructor(
    private readonly world: World,
    private readonly trees: readonly IssuedTree[],
  ) {
    const store = new ScheduledEventStore(world.workStore, world.storeNet, world.client);
    const repository = new WorkUnitRepository(store, (id) => world.names.workEventSubject(id));
    this.units = new WorkUnits(repository, { nowMs: () => world.scheduler.nowMs }, 5);
    this.sender = new SimCommandSender(world.bus, world.client, world.names, 250);
  }

  start(): void {
    this.loop(this.world.shape.submitEveryMs, () => this.submit());
    this.loop(this.world.shape.directEveryMs, () => this.direct());
  }

  /** A caller aborts one of the units still running. */
  abortOne(): void {
    const open = [...this.world.checker.units.entries()].filter(([, u]) => !u.ended).map(([id]) => id);
    if (open.length === 0) return;
    const workId = this.world.rng.workload.pick(open);
    const n = ++this.aborts;
    this.track(async () => {
      await this.units.requestAbort(workId, 'simulated caller abort', `abort-${n}`).catch(() => undefined);
      if (this.world.rng.workload.chance(0.5)) this.world.queue.notifyAbort(workId);
    });
  }

  private loop(everyMs: number, body: () => Promise<void>): void {
    const run = async () => {
      while (!this.stopped) {
        await this.world.scheduler.sleep(
          this.world.client,
          this.world.rng.workload.latency(everyMs),
          undefined,
          'client',
        );
        if (!this.stopped) this.track(body);
      }
    };
    void run();
  }

  private track(body: () => Promise<void>): void {
    this.busy++;
    void body()
      .catch((error: unknown) => this.world.note(`client failed: ${(error as Error).message}`))
      .finally(() => this.busy--);
  }

  private async submit(): Promise<void> {
    const w = this.world;
    const n = ++this.submitted;
    const workId = `u${n}`;
    const tree = w.rng.workload.pick(this.trees);
    const token = tree.childToken !== undefined && w.rng.workload.chance(0.5) ? tree.childToken : tree.token;
    const input = {
      work_id: workId,
      session_id: `s${n}`,
      purpose: 'execute' as const,
      token,
      route: [{ provider: 'sim', model: 'm1' }],
      messages: [{ role: 'user', content: `${WORK_MARK}${workId} hello` }],
      limits: {
        max_tokens: w.shape.maxTokens,
        timeout_ms: 10_000,
        retry_base_backoff_ms: 200,
        run_retry_base_backoff_ms: 500,
        max_backoff_ms: 5_000,
        max_retry_after_ms: 10_000,
      },
    };
    // A lost acknowledgement leaves the caller not knowing: it re-sends the same work id, which dedupes.
    for (;;) {
      try {
        const result = await this.units.submit(input);
        if (result.ok) w.queue.publish(workId, token);
        return;
      } catch {
        await w.scheduler.sleep(w.client, 500, undefined, 'resubmit pause');
      }
    }
  }

  private async direct(): Promise<void> {
    const w = this.world;
    const rng = w.rng.workload;
    const n = ++this.directCalls;
    const tree = rng.pick(this.trees);
    const request_id = `d${n}`;
    const admit = {
      request_id,
      token: tree.token,
      server_id: 'tools',
      tool_name: 'lookup',
      parameters_hash: createHash('sha256').update(`parameters ${n}`).digest('hex'),
      requested_cost: rng.range(1, 60),
      context: { kind: 'standalone' },
    };
    const hold = holdId(request_id, tree.rootId, 1);
    let answer = await this.ask('admit', `${request_id}:admit`, admit, hold);
    // B13: a preflight hands out a nonce; the caller redeems it with a second Admit.
    if (answer?.verdict === 'allow' && answer.dispatch === false && answer.execution_nonce !== undefined)
      answer = await this.ask(
        'admit',
        `${request_id}:admit:nonce`,
        { ...admit, execution_nonce: answer.execution_nonce },
        hold,
      );
    if (answer?.verdict !== 'allow' || answer.dispatch !== true || answer.hold_id === undefined) return;
    const proof = answer.admission_proof;
    if (
      !proof ||
      proof.claims['hold_id'] !== answer.hold_id ||
      !w.signer.verify(proof.claims, proof.signature, proof.key_id)
    )
      w.checker.fail(`admit ${request_id} allowed without a proof that verifies for ${answer.hold_id}`);
    w.provider.admit(`direct ${request_id}`, answer.hold_id);
    if (rng.chance(0.1)) await this.replay(admit, request_id, hold);
    if (rng.chance(0.2))
      await this.ask(
        'increase',
        `${request_id}:increase`,
        { hold_id: hold, amount_units: rng.range(1, 30), currency: 'USD', admission_proof: proof },
        hold,
      );
    await this.ask(
      'settle',
      `${request_id}:settle`,
      { hold_id: hold, outcome: this.outcome(admit.requested_cost), admission_proof: proof },
      hold,
    );
  }

  /** B7: a new command with a request id that was already admitted is a replay, and is denied. */
  private async replay(admit: Record<string, unknown>, requestId: string, hold: string): Promise<void> {
    const again = await this.ask('admit', `${requestId}:replay`, admit, undefined);
    if (again?.verdict === 'allow')
      this.world.checker.fail(`a replay of request ${requestId} (hold ${hold}) was allowed`);
  }

  private outcome(cost: number): Record<string, unknown> {
    const rng = this.world.rng.workload;
    const roll = rng.int(10);
    if (roll < 7)
      return {
        kind: 'completed',
        cost_units: rng.chance(0.05) ? cost + rng.range(1, 40) : rng.range(0, cost),
        currency: 'USD',
      };
    if (roll === 7) return { kind: 'failed_after_dispatch', failure: 'generic' };
    if (roll === 8) return { kind: 'not_dispatched', reason: 'the caller changed its mind' };
    return { kind: 'elicitation_required', message: 'the tool needs the user to confirm' };
  }

  /** Sends one command id until it is answered; a caller that gives up leaves its hold to nobody. */
  private async ask(
    command: string,
    commandId: string,
    payload: unknown,
    hold: string | undefined,
  ): Promise<AdmitReply | undefined> {
    for (let round = 1; round <= ROUNDS_MAX; round++) {
      try {
        const reply = await this.sender.send<AdmitReply & { receipt?: AdmitReply }>(
          'budget',
          command,
          commandId,
          payload,
          SEND,
        );
        if (reply.ok) return reply.value;
        // A full stream stored nothing of this write: the same command id is sent again later.
        if (reply.error.type !== 'rejected' || reply.error.reason !== 'stream_full') return undefined;
      } catch {
        // No answer: the outcome is unknown, and only the same command id can learn it.
      }
      await this.world.scheduler.sleep(this.world.client, 1_000, undefined, `re-send ${commandId}`);
    }
    if (hold !== undefined) this.exempt.add(hold);
    this.world.note(`client gave up on ${command} ${commandId}`);
    return undefined;
  }
}
