// Which (server, tool) pairs a capability's grants name, read from the budget ledger (the
// capability's CapabilityIssued event in its root's stream). It only decides what tools/list
// offers: every call is still admitted by the authority, which also sees revocations.
import { jetstream } from '@nats-io/jetstream';
import { budgetEventRegistry } from '@tally/budget-application';
import type { HostContext } from '@tally/platform-app';
import { JetStreamEventStore } from '@tally/platform-jetstream';

export interface GrantedTool {
  readonly server_id: string;
  /** A tool name, or "*" for every tool of the server. */
  readonly tool_name: string;
}

/** Events of one delegation tree a load may read; a tree is bounded by the authority's own limits. */
const TREE_EVENTS_MAX = 100_000;
const CACHED_MAX = 10_000;

export class CapabilityGrants {
  private readonly store: JetStreamEventStore;
  /** Grants never change after issue (a delegation is a new capability), so they are cached by id. */
  private readonly cache = new Map<string, readonly GrantedTool[]>();

  constructor(private readonly ctx: HostContext) {
    const { nats, config } = ctx;
    this.store = new JetStreamEventStore(jetstream(nats.nc, { timeout: config.nats.publish_timeout_ms }), nats.jsm, {
      stream: nats.names.budgetEventsStream,
      registry: budgetEventRegistry(),
      publishTimeoutMs: config.nats.publish_timeout_ms,
      loadEventsMax: TREE_EVENTS_MAX,
      // By direct get only (one round trip per commit, and cached per capability): the
      // orchestrator's NATS user may read the budget stream but not create a consumer on it (ADR 0015).
      directReadEventsMax: TREE_EVENTS_MAX,
      loadIdleTimeoutMs: config.nats.publish_timeout_ms,
    });
  }

  async of(capabilityId: string, rootId: string): Promise<readonly GrantedTool[]> {
    const hit = this.cache.get(capabilityId);
    if (hit) return hit;
    const { events } = await this.store.load(this.ctx.nats.names.budgetEventSubject(rootId));
    const issued = events
      .map((e) => e.event)
      .find(
        (e) =>
          e.type === 'CapabilityIssued' && (e.payload as { capability_id?: string }).capability_id === capabilityId,
      );
    const grants = ((issued?.payload as { grants?: GrantedTool[] } | undefined)?.grants ?? []).map((g) => ({
      server_id: g.server_id,
      tool_name: g.tool_name,
    }));
    if (issued) {
      this.cache.set(capabilityId, grants);
      if (this.cache.size > CACHED_MAX) this.cache.delete(this.cache.keys().next().value!);
    }
    return grants;
  }
}

export function granted(grants: readonly GrantedTool[], server: string, tool: string): boolean {
  return grants.some((g) => g.server_id === server && (g.tool_name === tool || g.tool_name === '*'));
}
