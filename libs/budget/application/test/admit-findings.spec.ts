// Proves on a real JetStream stream that the Admit findings of the hold protocol's model
// (docs/spec/model/README.md, F1 and F2) stay fixed: one allow per hold when two identical
// requests race with the capture in its own commit, and a re-sent Admit whose command was
// already denied takes no hold, even on a replica whose cache predates the denial; and an
// Admit whose stream is full after its capture committed is answered so that it is re-sent.
import { jetstreamManager } from '@nats-io/jetstream';
import { afterEach, describe, expect, it } from '@jest/globals';
import { AuthorityFixture, MONETARY, holdOf } from './authority.fixture.js';

/** Holds every lease reservation until the test opens it, in the order the test chooses. */
function gateReservations(f: AuthorityFixture): Array<() => void> {
  const gates: Array<() => void> = [];
  const reserve = f.hook.reserve.bind(f.hook);
  f.hook.reserve = async (request) => {
    await new Promise<void>((open) => gates.push(open));
    return reserve(request);
  };
  return gates;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!condition()) throw new Error(`timed out waiting for ${what}`);
}

describe('Admit findings of the hold protocol model, against the real authority', () => {
  let f: AuthorityFixture;
  afterEach(async () => f?.dispose());

  it('F1 B8 with the capture in its own commit, a twin whose hold another command captured is denied: one allow, one payment authorization, one capture', async () => {
    f = await AuthorityFixture.start({ limits: { captureWithAuthorize: false } });
    const cap = await f.issue([MONETARY]);
    const gates = gateReservations(f);
    // The twin authorizes the hold, then the orchestrator's identical request joins it (B8).
    const twin = f.admit('f1-twin', cap);
    await until(() => gates.length === 1, 'the twin at the hook');
    const orchestrator = f.admit('f1-twin', cap);
    await until(() => gates.length === 2, 'the orchestrator at the hook');
    // The one that joined captures first and waits at the rail, before its allow.
    f.rail.configureReference('f1-twin', { authorize: 'block_until_released' });
    gates[1]!();
    await until(() => f.rail.counters.authorize === 1, 'the orchestrator at the rail');
    // The twin that authorized finds its capture refused: the capture is the other command's,
    // so it is denied at once and never reaches the rail.
    let twinAnswered = false;
    void twin.then(() => (twinAnswered = true));
    gates[0]!();
    // Before the fix the twin went on from the capture to the rail (and then to a second allow).
    await until(() => twinAnswered || f.rail.counters.authorize > 1, 'the twin answered, or at the rail');
    f.rail.releaseBlockedAuthorizations();
    expect(await twin).toMatchObject({ verdict: 'deny', reason: 'monetary invocation was already dispatched' });
    expect(await orchestrator).toMatchObject({ verdict: 'allow', dispatch: true, hold_id: holdOf('f1-twin', cap) });
    expect(f.rail.counters.authorize).toBe(1);
    const state = await f.newAuthority().treeState(cap.root_id);
    expect(state.holds.get(holdOf('f1-twin', cap))).toMatchObject({ status: 'captured', admitted: true });
    expect(await f.kinds(cap)).toEqual(['capture_invocation', 'authorize_exposure']);
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 100n });
  });

  it('F2 B20 a budget-exhausted deny whose reply was lost, re-sent to a replica whose cache predates it after room came back, gets that deny and takes no hold', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([{ ...MONETARY, max_total_cost_units: 100n }]);
    const stale = f.newAuthority();
    // The stale replica caches the tree when it admits the request that takes all the room.
    const filler = await stale.admit(f.admitCommand('f2-filler', cap));
    expect(filler.verdict).toBe('allow');
    const command = f.admitCommand('f2-resent', cap);
    const denied = await f.authority.admit(command);
    expect(denied).toMatchObject({ verdict: 'deny', reason: 'budget exhausted' });
    // The room comes back: the filler settles at 0, on the replica that denied.
    await f.settle(filler.hold_id!, { kind: 'completed', cost_units: 0n });
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 0n });
    const authorizations = f.rail.counters.authorize;
    // The caller never got the deny and re-sends the same command id, to the stale replica.
    expect(await stale.admit(command)).toEqual(denied);
    expect(f.rail.counters.authorize).toBe(authorizations);
    const state = await f.newAuthority().treeState(cap.root_id);
    expect(state.requests.has('f2-resent')).toBe(false);
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 0n });
  });

  it('ADR 0058 stream-full-after-capture: an Admit whose allow meets a full stream after its capture committed gives no final answer, and its re-send is allowed on that capture', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const command = f.admitCommand('full-after-capture', cap);
    f.rail.configureReference('full-after-capture', { authorize: 'block_until_released' });
    const first = f.authority.admit(command).catch((error: unknown) => error);
    await until(() => f.rail.counters.authorize === 1, 'the Admit at the rail, after its capture');
    // The stream takes no more messages (discard new): the allow's append is refused as full.
    const jsm = await jetstreamManager(f.nc);
    const stream = f.names.budgetEventsStream;
    const held = (await jsm.streams.info(stream)).state.messages;
    await jsm.streams.update(stream, { max_msgs: held });
    f.rail.releaseBlockedAuthorizations();
    const refused = await first;
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).name).toBe('AdmissionOutstanding');
    await jsm.streams.update(stream, { max_msgs: -1 });
    const allowed = await f.newAuthority().admit(command);
    expect(allowed).toMatchObject({ verdict: 'allow', dispatch: true, hold_id: holdOf('full-after-capture', cap) });
    const state = await f.newAuthority().treeState(cap.root_id);
    expect(state.holds.get(holdOf('full-after-capture', cap))).toMatchObject({ status: 'captured', admitted: true });
    expect(await f.kinds(cap)).toEqual(['capture_invocation', 'authorize_exposure']);
  });
});
