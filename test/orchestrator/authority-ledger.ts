// The test's own line to the budget authority an OrchestratorHarness runs: Admit commands
// over core NATS, sent the way the orchestrator's budget port sends them (so a test can ask
// under the command id a unit will use, or replay one), and the events of a capability's
// tree as its ledger stream holds them.
import { createHash } from 'node:crypto';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { budgetCommandIds } from '@tally/orchestrator-application';
import { canonicalJson, isCommitWire, tallyNames, type TallyNames } from '@tally/contracts';
import { connectNats } from '@tally/platform-jetstream';
import { CoreCommandClient } from '@tally/platform-nest';

export type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** One event of a budget tree: its type and payload, in commit order. */
export interface LedgerEvent {
  readonly type: string;
  readonly payload: Json;
}

const SEND = { timeoutMs: 30_000, attemptsMax: 3 };

export class AuthorityLedger {
  private constructor(
    private readonly nc: NatsConnection,
    private readonly names: TallyNames,
    private readonly client: CoreCommandClient,
    private readonly jsm: JetStreamManager,
  ) {}

  static async open(natsUrl: string, namespace: string): Promise<AuthorityLedger> {
    const nc = await connectNats({
      url: natsUrl.split(',')[0]!,
      name: `nonce-test-${namespace}`,
      connectTimeoutMs: 5_000,
      maxReconnectAttempts: -1,
      reconnectTimeWaitMs: 100,
    });
    const names = tallyNames(namespace);
    return new AuthorityLedger(
      nc,
      names,
      new CoreCommandClient(nc, { names, retryDelayMs: 100 }),
      await jetstreamManager(nc),
    );
  }

  /** The authority's answer to an Admit under `commandId`; a refused command throws. */
  async admit(commandId: string, payload: Json): Promise<Json> {
    const reply = await this.client.send<Json>('budget', 'admit', commandId, payload, SEND);
    if (!reply.ok) throw new Error(`admit ${commandId} refused: ${JSON.stringify(reply.error)}`);
    return reply.value;
  }

  /** Every event of the tree rooted at `rootCapabilityId`, read from the budget stream. */
  async events(rootCapabilityId: string): Promise<LedgerEvent[]> {
    const stream = this.names.budgetEventsStream;
    const subject = this.names.budgetEventSubject(rootCapabilityId);
    const info = await this.jsm.streams.info(stream, { subjects_filter: subject });
    const out: LedgerEvent[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const message = await this.jsm.streams.getMessage(stream, { seq }).catch(() => null);
      if (!message || message.subject !== subject) continue;
      const plain = message.json<unknown>();
      for (const event of (isCommitWire(plain) ? plain.events : [plain]) as Json[])
        out.push({ type: event['type'], payload: event['payload'] });
    }
    return out;
  }

  close(): Promise<void> {
    return this.nc.close();
  }
}

/**
 * The ids a unit's first attempt is admitted under, and the hash its call should be bound to,
 * computed here from the definition (SHA-256 hex of the canonical JSON of provider, model,
 * messages, max_tokens and options), not with the worker's own helper.
 */
export function firstAttemptOf(body: Json): { requestId: string; commandId: string; parametersHash: string } {
  const leg = body['route'][0];
  const ids = budgetCommandIds(body['work_id'], 0);
  const parameters = {
    provider: leg['provider'],
    model: leg['model'],
    messages: body['messages'],
    max_tokens: body['limits']['max_tokens'],
    options: body['options'],
  };
  return {
    requestId: ids.request_id,
    commandId: ids.admit,
    parametersHash: createHash('sha256').update(canonicalJson(parameters)).digest('hex'),
  };
}

/** An Admit of a unit's first attempt as the orchestrator's port sends it, with `extra` on top. */
export function unitAdmit(body: Json, token: string, extra: Json = {}): Json {
  const attempt = firstAttemptOf(body);
  const leg = body['route'][0];
  return {
    request_id: attempt.requestId,
    token,
    server_id: leg['provider'],
    tool_name: leg['model'],
    parameters_hash: attempt.parametersHash,
    requested_cost: 200,
    context: { kind: 'session', session_id: body['session_id'], work_id: body['work_id'] },
    ...extra,
  };
}
