// Proves issue 12 item 2 in the pure domain: each capability's receipt chain starts at its issue event, a chained
// receipt moves it on by one, receipts naming no capability share the tree's chain, and a receipt out of its chain
// is refused as a bug.
import { describe, expect, it } from '@jest/globals';
import { receiptChainOf, type BudgetCommand } from '../src/index.js';
import { MONETARY, NOW, given, issue, run, when } from './tree.fixture.js';

function receipt(commandId: string, capabilityId: string | null, chainIndex?: number): BudgetCommand {
  const body = {
    id: `receipt:root:${commandId}`,
    capability_id: capabilityId,
    ...(chainIndex === undefined ? {} : { chain_index: chainIndex, prev_hash: 'h' }),
  };
  return {
    type: 'RecordReceipt',
    receipt_id: body.id,
    command_id: commandId,
    receipt: body,
    signature: 's',
    key_id: 'k',
    now_ms: NOW,
  };
}

describe('receipt chain (issue 12 item 2)', () => {
  const tree = () => run(given([]), issue('root', [MONETARY]), issue('child', [MONETARY], { parent_id: 'root' }));

  it('item 2 given a capability issued, its chain is at index 0 and links to its issue event', () => {
    const g = tree();
    const head = receiptChainOf(g.state, 'child');
    expect(head.next_index).toBe(0);
    expect(head.previous).toMatchObject({ kind: 'issued', event_id: g.recorded[1]!.event_id });
    expect(receiptChainOf(g.state, '').previous).toEqual({ kind: 'none' });
  });

  it('item 2 when chained receipts are recorded, each chain moves on by one and links to its last receipt', () => {
    const g = run(tree(), receipt('c1', 'root', 0), receipt('c2', 'child', 0), receipt('c3', 'root', 1));
    expect(receiptChainOf(g.state, 'root')).toMatchObject({
      next_index: 2,
      previous: { kind: 'receipt', receipt: { command_id: 'c3' } },
    });
    expect(receiptChainOf(g.state, 'child').next_index).toBe(1);
    const orphans = run(g, receipt('c4', null, 0), receipt('c5', null, 1));
    expect(receiptChainOf(orphans.state, '').next_index).toBe(2);
  });

  it('item 2 a receipt from before the chain (no chain_index) leaves the chain where it is', () => {
    const g = run(tree(), receipt('old', 'root'));
    expect(receiptChainOf(g.state, 'root').next_index).toBe(0);
  });

  it('item 2 then a receipt whose index is not its chain’s next one is an assertion, never recorded', () => {
    const g = run(tree(), receipt('c1', 'root', 0));
    expect(() => when(g, receipt('c2', 'root', 0))).toThrow(/out of its chain/);
    expect(() => when(g, receipt('c2', 'root', 2))).toThrow(/out of its chain/);
  });
});
