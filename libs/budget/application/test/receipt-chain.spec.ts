// Proves issue 12 item 2: each receipt carries chain_index and prev_hash, in commit order per capability and
// anchored to its issue event, both covered by the signature, and a replay of the stream rebuilds the same chain.
import { afterEach, describe, expect, it } from '@jest/globals';
import { UNVERIFIED_TREE, type SignedReceipt } from '@tally/budget-application';
import { verifyWithPublicKey } from '@tally/budget-infrastructure';
import { issueEventHash, receiptChainKey, receiptHash, UNANCHORED_CHAIN_HASH } from '@tally/contracts';
import { AuthorityFixture, MONETARY, PLAIN } from './authority.fixture.js';

/** The anchors of every capability of a tree, hashed from its issue events as the stream holds them. */
async function issueAnchors(f: AuthorityFixture, rootId: string): Promise<Map<string, string>> {
  const { events } = await f.store.load(f.names.budgetEventSubject(rootId), 0);
  const anchors = new Map<string, string>();
  for (const { event } of events)
    if (event.type === 'CapabilityIssued') {
      const data = JSON.parse(JSON.stringify(event.payload)) as Record<string, unknown>;
      anchors.set(data['capability_id'] as string, issueEventHash({ event_id: event.eventId, data }));
    }
  return anchors;
}

/** Checks every chain of `receipts` (commit order) runs 0, 1, 2 … and links each to the one before. */
function expectChained(receipts: readonly SignedReceipt[], anchors: ReadonlyMap<string, string>): void {
  const previous = new Map<string, SignedReceipt>();
  for (const receipt of receipts) {
    const key = receiptChainKey(receipt as unknown as Record<string, unknown>);
    const before = previous.get(key);
    const expected = {
      chain_index: before === undefined ? 0 : before.chain_index! + 1,
      prev_hash:
        before === undefined
          ? (anchors.get(key) ?? UNANCHORED_CHAIN_HASH)
          : receiptHash(before as unknown as Record<string, unknown>),
    };
    expect({ id: receipt.id, chain_index: receipt.chain_index, prev_hash: receipt.prev_hash }).toEqual({
      id: receipt.id,
      ...expected,
    });
    previous.set(key, receipt);
  }
}

describe('tamper-evident receipts (issue 12 item 2)', () => {
  let f: AuthorityFixture;
  afterEach(async () => f?.dispose());

  it('item 2 each capability chains its receipts in commit order from its issue event, and the signature covers chain_index and prev_hash', async () => {
    f = await AuthorityFixture.start();
    const root = await f.issue([{ ...MONETARY, max_invocations: 5 }, PLAIN]);
    const child = await f.issue([{ ...MONETARY, max_invocations: 5, max_total_cost_units: 200n }], {
      parent_id: root.id,
      budget_share_units: 200n,
    });
    const a = await f.admit('r-1', root);
    await f.admit('r-1', root);
    await f.admit('c-1', child);
    await f.settle(a.hold_id!, { kind: 'completed', cost_units: 7n });
    await f.admit('r-2', root, { server_id: PLAIN.server_id, tool_name: PLAIN.tool_name });
    const receipts = await f.authority.receipts(root.root_id);
    expect(receipts).toHaveLength(5);
    expect(receipts.filter((r) => r.capability_id === root.id).map((r) => r.chain_index)).toEqual([0, 1, 2, 3]);
    expect(receipts.filter((r) => r.capability_id === child.id).map((r) => r.chain_index)).toEqual([0]);
    expectChained(receipts, await issueAnchors(f, root.root_id));

    const [key] = f.authority.keys();
    for (const { signature, ...body } of receipts) {
      expect(verifyWithPublicKey(body, signature, key!.public_key)).toBe(true);
      expect(verifyWithPublicKey({ ...body, chain_index: body.chain_index! + 1 }, signature, key!.public_key)).toBe(
        false,
      );
      expect(verifyWithPublicKey({ ...body, prev_hash: UNANCHORED_CHAIN_HASH }, signature, key!.public_key)).toBe(
        false,
      );
    }
  });

  it('item 2 admits racing on one capability from two authority processes chain without a gap, and a replay rebuilds the same chain and signatures', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([{ ...MONETARY, max_invocations: 100, max_total_cost_units: 100_000n }]);
    const other = f.newAuthority();
    const decisions = await Promise.all(
      Array.from({ length: 24 }, (_, i) => (i % 2 === 0 ? f.authority : other).admit(f.admitCommand(`race-${i}`, cap))),
    );
    expect(decisions.every((d) => d.verdict === 'allow')).toBe(true);
    const receipts = await f.authority.receipts(cap.root_id);
    expect(receipts.map((r) => r.chain_index)).toEqual(receipts.map((_, i) => i));
    expectChained(receipts, await issueAnchors(f, cap.root_id));
    // What each caller was answered is the receipt the chain holds.
    for (const d of decisions) expect(receipts.find((r) => r.id === d.receipt.id)).toEqual(d.receipt);
    expect(await f.newAuthority().receipts(cap.root_id)).toEqual(receipts);
  });

  it('item 2 receipts that name no capability (a token that does not verify) chain per tree from the hash of nothing', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const forged = `${cap.token.slice(0, -4)}AAAA`;
    await f.admit('forged-1', cap, { token: forged });
    await f.admit('forged-2', cap, { token: forged });
    const receipts = await f.authority.receipts(UNVERIFIED_TREE);
    expect(receipts.map((r) => [r.capability_id, r.chain_index])).toEqual([
      [null, 0],
      [null, 1],
    ]);
    expect(receipts[0]!.prev_hash).toBe(UNANCHORED_CHAIN_HASH);
    expectChained(receipts, new Map());
  });
});
