// Proves the simulator's checks catch what they claim to: two holds decided on the same state
// and both stored (a fork, as a server that does not serialize expectations would let through)
// overspend a grant, a receipt that does not link to its chain breaks it, a paid call on a hold
// that was never admitted, and a replica whose memory differs from the replay.
import { describe, expect, it } from '@jest/globals';
import { budgetEventRegistry, toMessage } from '@tally/budget-application';
import { decideSequence, initialState, type BudgetCommand, type TreeState } from '@tally/budget-domain';
import { tallyNames } from '@tally/contracts';
import { workEventRegistry } from '@tally/orchestrator-application';
import { Checker } from '../src/check/checker.js';
import { ProviderServer } from '../src/ports/sim-provider.js';
import { SimSigner } from '../src/ports/sim-signer.js';
import { Prng } from '../src/core/prng.js';
import { DEFAULT_FAULT_RATES, Faults } from '../src/world/faults.js';
import { SimEventStore, SimStream } from '../src/index.js';

const NOW = 1_767_225_600_000;
const ROOT = 'cap_root';
const names = tallyNames('sim');
const streamConfig = { maxBytes: -1, maxMsgSizeBytes: 1024 * 1024, duplicateWindowMs: 120_000 };

function world() {
  const budget = new SimStream({ name: 'B', ...streamConfig }, budgetEventRegistry(), () => NOW);
  const work = new SimStream({ name: 'W', ...streamConfig }, workEventRegistry(), () => NOW);
  const signer = new SimSigner();
  const checker = new Checker(
    names,
    budget,
    work,
    signer,
    () => 'test',
    () => NOW,
  );
  const store = new SimEventStore(budget, { registry: budgetEventRegistry(), loadEventsMax: 10_000 });
  const subject = names.budgetEventSubject(ROOT);
  let state: TreeState = initialState();
  /** Decides on `on` (default: the tree as stored) and stores the events at the subject's end, whatever they were decided on. */
  const commit = async (commands: readonly BudgetCommand[], on: TreeState = state) => {
    const decision = decideSequence(commands, on);
    if (!decision.ok) throw new Error(decision.rejection.message);
    const messages = decision.events.map((e) => toMessage(e, ROOT, new Date(NOW).toISOString()));
    const { lastSequence } = await store.append(subject, messages, budget.subjectLast(subject));
    state = checker.fold.latest(ROOT) ?? state;
    return { lastSequence, decided: decision.state };
  };
  return { budget, checker, signer, commit, current: () => state };
}

const issue: BudgetCommand = {
  type: 'IssueCapability',
  capability_id: ROOT,
  root_id: ROOT,
  subject_public_key: 'pk',
  expires_at_ms: NOW + 3_600_000,
  grants: [{ server_id: 'tools', tool_name: 'x', max_cost_per_invocation: 100n, max_total_cost_units: 100n }],
  now_ms: NOW,
  delegation_depth_max: 4,
  grants_max: 4,
};

const authorize = (requestId: string, cost: bigint): BudgetCommand => ({
  type: 'AuthorizeHold',
  request_id: requestId,
  capability_id: ROOT,
  subject: 'pk',
  server_id: 'tools',
  tool_name: 'x',
  parameters_hash: 'h',
  requested_cost: cost,
  preflight: false,
  context: { kind: 'standalone' },
  hold_ttl_ms: 60_000,
  now_ms: NOW,
});

describe('simulation checker', () => {
  it('B19 two holds decided on the same state and both stored take committed past the limit: the shadow and the replay both say so', async () => {
    const w = world();
    await w.commit([issue]);
    const forkedFrom = w.current();
    await w.commit([authorize('r1', 80n)], forkedFrom);
    expect(w.checker.violations).toEqual([]);
    await w.commit([authorize('r2', 50n)], forkedFrom);
    expect(w.checker.violations.some((v) => v.includes('a hold took committed 130') && v.includes('past 100'))).toBe(
      true,
    );
    expect(w.checker.violations.some((v) => v.includes('replaying commit'))).toBe(true);
  });

  it('B17 a receipt whose prev_hash does not cover its chain anchor (the issue event) breaks the receipt chain', async () => {
    const w = world();
    await w.commit([issue]);
    const record = (id: string): BudgetCommand => {
      const receipt = {
        id: `receipt:${ROOT}:${id}`,
        capability_id: ROOT,
        chain_index: 0,
        key_id: w.signer.keyId,
        prev_hash: 'not-the-issue-hash',
      };
      return {
        type: 'RecordReceipt',
        receipt_id: receipt.id,
        command_id: id,
        receipt,
        signature: w.signer.sign(receipt, w.signer.keyId),
        key_id: w.signer.keyId,
        now_ms: NOW,
      };
    };
    await w.commit([record('c1')]);
    expect(w.checker.violations.some((v) => v.includes(`receipt receipt:${ROOT}:c1 is at 0`))).toBe(true);
  });

  it('O7 a paid call on a hold that the ledger shows captured but not admitted is a violation; on an admitted one it is not', async () => {
    const w = world();
    await w.commit([issue]);
    const { decided } = await w.commit([
      authorize('r1', 10n),
      { type: 'CaptureInvocation', request_id: 'r1', now_ms: NOW, same_commit: true },
    ]);
    const holdId = [...decided.holds.values()][0]!.hold_id;
    const failures: string[] = [];
    const faults = new Faults(new Set(), DEFAULT_FAULT_RATES, new Prng(1, 1));
    const provider = new ProviderServer(w.checker.shadow, faults, new Prng(1, 2), (d) => failures.push(d));
    provider.admit('u1', holdId);
    expect(failures).toEqual([`paid call for u1 on hold ${holdId}, which is not admitted`]);
    await w.commit([{ type: 'AdmitInvocation', hold_id: holdId, now_ms: NOW }]);
    failures.length = 0;
    provider.admit('u2', holdId);
    expect(failures).toEqual([]);
    provider.admit('u3', holdId);
    expect(failures).toEqual([`hold ${holdId} paid for 2 provider calls`]);
  });

  it('a replica whose tree differs from the replay at its sequence is a violation', async () => {
    const w = world();
    await w.commit([issue]);
    const { lastSequence } = await w.commit([authorize('r1', 10n)]);
    // A replica that holds the second commit's hold with another exposure than the stream says.
    const replayed = w.checker.fold.latest(ROOT)!;
    const hold = [...replayed.holds.values()][0]!;
    const wrong = { ...replayed, holds: replayed.holds.with(hold.hold_id, { ...hold, exposure_units: 11n }) };
    const replica = { name: 'a1', authority: { cachedTree: () => ({ state: wrong, lastSequence }) } as never };
    w.checker.compareReplicas([replica]);
    expect(w.checker.violations.some((v) => v.includes('a1 holds tree cap_root unlike its replay'))).toBe(true);
  });
});
