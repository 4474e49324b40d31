// Which tenant a delegation tree belongs to: the tenant its root's CapabilityIssued names, or
// the tenant `default` for trees issued before capabilities carried one. The root's issue is
// the tree subject's first message, read once by direct get and remembered.
import type { EventRegistry } from '@tally/contracts';
import type { HostContext } from '@tally/platform-app';

export const DEFAULT_TENANT_ID = 'default';

export class TenantOfTree {
  private readonly cache = new Map<string, string>();

  constructor(
    private readonly ctx: HostContext,
    private readonly registry: EventRegistry,
    private readonly limits: { readonly cachedTreesMax: number },
  ) {}

  async tenantOf(treeSubject: string): Promise<string> {
    const hit = this.cache.get(treeSubject);
    if (hit !== undefined) return hit;
    const first = await this.ctx.nats.jsm.direct.getMessage(this.ctx.nats.names.budgetEventsStream, {
      seq: 1,
      next_by_subj: treeSubject,
    });
    const decoded = first ? this.registry.decodeCommit(first.data) : undefined;
    const issued = decoded?.ok ? decoded.value.find((e) => e.type === 'CapabilityIssued') : undefined;
    const named = issued?.payload['tenant_id'];
    const tenant = typeof named === 'string' && named !== '' ? named : DEFAULT_TENANT_ID;
    this.cache.set(treeSubject, tenant);
    if (this.cache.size > this.limits.cachedTreesMax) this.cache.delete(this.cache.keys().next().value!);
    return tenant;
  }
}
