// B20 / Issue 9: an admission the orchestrator cannot verify is never dispatched, and its
// hold does not stay exposed. The authority captured the hold and authorized its payment;
// expiry never reverses a captured hold, so before this the exposure stayed for good (the
// cluster kill test found a tree left with exposure after the storm). Here the orchestrator's
// budget port runs against a real authority over core NATS, with the real proof verifier
// given a key view that does not know the authority's key yet (a replica whose directory
// has not folded the signing key), and a verifier that does as the control.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { AdmitRequest } from '@tally/orchestrator-application';
import { AdmissionProofVerifier, type KnownKeys } from '../../apps/agent-orchestrator/src/budget/admission-proofs.js';
import { JetStreamBudgetPort } from '../../apps/agent-orchestrator/src/budget/jetstream-budget.port.js';
import { AuthorityStack, eventually, monetaryGrant, type Json } from '../budget/support/authority-stack.js';

let stack: AuthorityStack;
beforeAll(async () => {
  stack = await AuthorityStack.create('unverif');
  await stack.start();
}, 180_000);
afterAll(async () => stack?.dispose(), 60_000);

/** A directory view that has not seen any signing key yet. */
const NO_KEYS: KnownKeys = { list: () => [], verify: () => false };

async function portWith(authorityUrl: string | undefined): Promise<JetStreamBudgetPort> {
  const verifier = new AdmissionProofVerifier(NO_KEYS, {
    ...(authorityUrl === undefined ? {} : { authorityUrl }),
    cooldownMs: 1_000,
    timeoutMs: 5_000,
    nowMs: () => Date.now(),
  });
  return new JetStreamBudgetPort(await stack.commands(), { replyTimeoutMs: 30_000, attemptsMax: 3 }, verifier);
}

function admitRequest(token: string, id: string): AdmitRequest {
  return {
    command_id: `${id}:admit`,
    request_id: id,
    token,
    server_id: 'cost-srv',
    tool_name: 'compute',
    parameters_hash: '0'.repeat(64),
    requested_cost_units: 40n,
    context: { kind: 'work_unit', work_id: `work-${id}`, session_id: `session-${id}`, purpose: 'execute', ordinal: 0 },
  };
}

const usageIs = (capId: string, count: number, committed: number) =>
  eventually(
    () => stack.usage(capId),
    (u) => u['invocation_count'] === count && u['committed_cost_units'] === committed,
    30_000,
    `usage ${count}/${committed}`,
  );

describe('an admission that does not verify at the orchestrator', () => {
  it('B20 an allow whose proof does not verify is refused, never dispatched, and its captured hold is released at once (usage back to 0/0), the same on a re-send', async () => {
    const cap: Json = await stack.issue([monetaryGrant({ max_invocations: 5 })]);
    const port = await portWith(undefined);
    const request = admitRequest(cap['token'], 'unverified-1');

    const decision = await port.admit(request);
    expect(decision.verdict).toBe('deny');
    expect(decision.reason).toContain('admission_unverified');
    await usageIs(cap['id'], 0, 0);
    const holds = (await stack.ok('GET', `/v1/capabilities/${cap['id']}/holds`))['holds'] as Json[];
    expect(holds).toHaveLength(1);
    expect(holds[0]!['status']).not.toBe('captured');

    // A redelivered unit sends the same command id: the same answer, nothing held again.
    const again = await port.admit(request);
    expect(again.reason).toContain('admission_unverified');
    await usageIs(cap['id'], 0, 0);
  });

  it('B20 control: the same admission through a verifier that knows the authority key is allowed and stays held until settled', async () => {
    const cap: Json = await stack.issue([monetaryGrant({ max_invocations: 5 })]);
    const port = await portWith(stack.url);
    const decision = await port.admit(admitRequest(cap['token'], 'verified-1'));
    expect(decision.verdict).toBe('allow');
    await usageIs(cap['id'], 1, 40);
  });
});
