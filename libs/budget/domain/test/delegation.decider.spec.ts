// Proves delegation only narrows: grant subsets, no later expiry, sibling shares within the parent, and revocation of descendants.
import { describe, expect, it } from '@jest/globals';
import { descendants } from '../src/index.js';
import { HOUR, MONETARY, NOW, UNLIMITED, given, issue, run, standardTree, when } from './tree.fixture.js';

describe('delegation decider', () => {
  const root = () => run(given([]), issue('root', [MONETARY, UNLIMITED]));

  it('a child grant must be a subset of a parent grant', () => {
    const wider = when(root(), issue('c', [{ ...MONETARY, max_total_cost_units: 2000n }], { parent_id: 'root' }));
    expect(wider).toMatchObject({ ok: true });
    // The unlimited parent grant covers the wider child grant; a grant on another server is not covered.
    const other = when(root(), issue('c', [{ server_id: 'other', tool_name: 'compute' }], { parent_id: 'root' }));
    expect(other).toMatchObject({ ok: false, rejection: { code: 'grant_not_narrowing' } });
    const onlyMonetary = run(given([]), issue('root', [MONETARY]));
    expect(
      when(onlyMonetary, issue('c', [{ ...MONETARY, max_total_cost_units: 2000n }], { parent_id: 'root' })),
    ).toMatchObject({ ok: false, rejection: { code: 'grant_not_narrowing' } });
    expect(
      when(onlyMonetary, issue('c', [{ server_id: 'cost-srv', tool_name: 'compute' }], { parent_id: 'root' })),
    ).toMatchObject({ ok: false, rejection: { code: 'grant_not_narrowing' } });
  });

  it('a child expires no later than its parent', () => {
    expect(when(root(), issue('c', [MONETARY], { parent_id: 'root', expires_at_ms: NOW + HOUR + 1 }))).toMatchObject({
      ok: false,
      rejection: { code: 'expiry_beyond_parent' },
    });
  });

  it("siblings' budget shares never add up to more than the parent's capacity", () => {
    const g = standardTree();
    // root capacity = 1000 (its only capped grant is 1000 and the unlimited one makes it uncapped) -> unlimited, so use child-a (400).
    expect(
      when(g, issue('a2', [{ ...MONETARY, max_total_cost_units: 100n }], { parent_id: 'child-a', budget_units: 201n })),
    ).toMatchObject({
      ok: false,
      rejection: { code: 'budget_share_exceeds_parent' },
    });
    expect(
      when(g, issue('a2', [{ ...MONETARY, max_total_cost_units: 100n }], { parent_id: 'child-a', budget_units: 200n }))
        .ok,
    ).toBe(true);
  });

  it('revoking a capability revokes all of its descendants', () => {
    const g = run(standardTree(), { type: 'RevokeCapability', capability_id: 'child-a', now_ms: NOW });
    expect(descendants(g.state, 'child-a').sort()).toEqual(['child-a', 'child-a1']);
    expect(g.state.capabilities.get('child-a1')?.revoked_at_ms).toBe(NOW);
    expect(g.state.capabilities.get('child-b')?.revoked_at_ms).toBeUndefined();
    expect(when(g, issue('a2', [MONETARY], { parent_id: 'child-a' }))).toMatchObject({
      ok: false,
      rejection: { code: 'capability_revoked' },
    });
  });

  it('delegation depth is bounded', () => {
    expect(
      when(standardTree(), issue('deep', [MONETARY], { parent_id: 'child-a1', delegation_depth_max: 2 })),
    ).toMatchObject({ ok: false, rejection: { code: 'delegation_too_deep' } });
  });
});
