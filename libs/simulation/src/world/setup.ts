// The delegation trees of a run, issued before any fault strikes, through an authority
// replica as the HTTP API would: a root per tree with an LLM grant and a tool grant, and
// sometimes a child with a share of the budget.
import type { World } from './world.js';

export interface IssuedTree {
  readonly rootId: string;
  readonly token: string;
  readonly childId: string | undefined;
  readonly childToken: string | undefined;
}

const TTL_SECONDS = 30 * 86_400;

export async function issueTrees(world: World): Promise<IssuedTree[]> {
  const authority = world.authorities[0]!.authority!;
  const trees: IssuedTree[] = [];
  for (const [index, shape] of world.shape.trees.entries()) {
    const root = await authority.issue({
      command_id: `issue-tree-${index}`,
      subject_public_key: `subject-${index}`,
      ttl_seconds: TTL_SECONDS,
      grants: [shape.llm, shape.tool],
    });
    if (!root.ok) throw new Error(`issuing tree ${index} was refused: ${root.rejection.message}`);
    let child: { id: string; token: string } | undefined;
    if (shape.child) {
      const issued = await authority.delegate({
        command_id: `issue-child-${index}`,
        parent_id: root.value.id,
        subject_public_key: `subject-${index}-child`,
        ttl_seconds: TTL_SECONDS - 60,
        grants: [shape.child.llm],
        budget_share_units: shape.child.share_units,
      });
      if (!issued.ok) throw new Error(`delegating in tree ${index} was refused: ${issued.rejection.message}`);
      child = { id: issued.value.id, token: issued.value.token };
    }
    trees.push({ rootId: root.value.id, token: root.value.token, childId: child?.id, childToken: child?.token });
  }
  return trees;
}
