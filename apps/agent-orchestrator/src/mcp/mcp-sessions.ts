// The MCP sessions this replica holds open (issue 18 item 4, ADR 0054). A session counts
// against the replica's, its tenant's and its capability's quota from the moment it is asked
// for, so concurrent `initialize` requests cannot pass a quota between them. It ends, and its
// transport and server are closed so nothing of it stays in memory, when the client deletes
// it, when no request touched it for the idle time, when its token expires, or as soon as the
// revocation view hears that its capability, parent or root was revoked.
import type { CapabilityPrincipal } from '@tally/platform-auth';
import { Counter, Gauge, type Registry } from 'prom-client';

export interface SessionLimits {
  readonly sessionsMax: number;
  readonly perCapabilityMax: number;
  readonly perTenantMax: number;
  readonly idleMs: number;
}

/** Who holds a session, as its opening request's token says. */
export interface SessionOwner {
  readonly capabilityId: string;
  readonly tenantId: string;
  /** The capability, its parent and its root: a revocation of any of them ends the session. */
  readonly lineage: readonly string[];
  readonly expiresAtMs: number;
}

/** The settings' names: a refusal names the quota an operator would raise. */
export type Quota = 'mcp_sessions_per_capability_max' | 'mcp_sessions_per_tenant_max' | 'mcp_sessions_max';

export interface SessionRefusal {
  readonly quota: Quota;
  readonly limit: number;
  /** When the soonest session of the full scope could end on its own (idle or expiry), if one can. */
  readonly retryAfterMs: number | undefined;
}

export type EndReason = 'closed' | 'idle' | 'expired' | 'revoked' | 'unused' | 'shutdown';

export class SessionSlot {
  lastActiveMs: number;
  /** Requests of the session still being answered (a tool call may run for minutes): never idle then. */
  inFlight = 0;
  ended = false;

  constructor(
    readonly owner: SessionOwner,
    /** Frees what the session holds: its entry by id, its server and transport. */
    readonly close: () => Promise<void>,
    nowMs: number,
  ) {
    this.lastActiveMs = nowMs;
  }
}

export interface McpSessionsOptions {
  readonly limits: SessionLimits;
  readonly nowMs: () => number;
  readonly registry: Registry;
  readonly isRevoked: (capabilityId: string) => boolean;
  /** The parent named in a verified token's claims, if it has one. */
  readonly parentOf: (token: string) => string | undefined;
  /** Subscribes to revocations as the view learns them; returns the unsubscription. */
  readonly onRevoked: (listener: (capabilityId: string) => void) => () => void;
  readonly onError: (error: unknown) => void;
}

/** How often idle and expired sessions are looked for, at most; sooner for a short idle time. */
const SWEEP_MS_MAX = 1_000;
const SCOPE_LABELS = {
  mcp_sessions_max: 'process',
  mcp_sessions_per_tenant_max: 'tenant',
  mcp_sessions_per_capability_max: 'capability',
} as const;

export class McpSessions {
  private readonly all = new Set<SessionSlot>();
  private readonly byCapability = new Map<string, Set<SessionSlot>>();
  private readonly byTenant = new Map<string, Set<SessionSlot>>();
  private readonly refused: Counter<'scope'>;
  private readonly endedCount: Counter<'reason'>;
  private sweeper: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private revocationCheckPending = false;

  constructor(private readonly o: McpSessionsOptions) {
    const registers = [o.registry];
    const all = this.all;
    new Gauge({
      name: 'tally_mcp_sessions_open',
      help: 'MCP sessions this replica holds open (those being opened included)',
      registers,
      collect() {
        this.set(all.size);
      },
    });
    this.refused = new Counter({
      name: 'tally_mcp_sessions_refused_total',
      help: 'MCP sessions refused (429) by the quota that was full: process, tenant or capability',
      labelNames: ['scope'],
      registers,
    });
    this.endedCount = new Counter({
      name: 'tally_mcp_sessions_ended_total',
      help: 'MCP sessions ended, by reason: closed by the client, idle, expired or revoked token, unused, shutdown',
      labelNames: ['reason'],
      registers,
    });
  }

  start(): void {
    const every = Math.min(SWEEP_MS_MAX, Math.ceil(this.o.limits.idleMs / 4));
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
    this.unsubscribe = this.o.onRevoked(() => this.checkRevocationsSoon());
  }

  async stop(): Promise<void> {
    clearInterval(this.sweeper);
    this.unsubscribe?.();
    await Promise.all([...this.all].map((slot) => this.end(slot, 'shutdown')));
  }

  get size(): number {
    return this.all.size;
  }

  /**
   * Counts a new session of `caller` against every quota, or names the first that is full.
   * `revoked` when the view learned of a revocation after the guard let the request in: asked
   * here, in the same turn as the count, no revocation can fall between the two (one heard
   * before is seen now, one heard after finds the session counted).
   */
  admit(caller: CapabilityPrincipal, close: () => Promise<void>): SessionSlot | SessionRefusal | 'revoked' {
    const { limits } = this.o;
    const owner = this.ownerOf(caller);
    if (owner.lineage.some((id) => this.o.isRevoked(id))) return 'revoked';
    const refusal =
      this.full(
        this.byCapability.get(owner.capabilityId),
        limits.perCapabilityMax,
        'mcp_sessions_per_capability_max',
      ) ??
      this.full(this.byTenant.get(owner.tenantId), limits.perTenantMax, 'mcp_sessions_per_tenant_max') ??
      this.full(this.all, limits.sessionsMax, 'mcp_sessions_max');
    if (refusal) {
      this.refused.inc({ scope: SCOPE_LABELS[refusal.quota] });
      return refusal;
    }
    const slot = new SessionSlot(owner, close, this.o.nowMs());
    this.all.add(slot);
    addTo(this.byCapability, owner.capabilityId, slot);
    addTo(this.byTenant, owner.tenantId, slot);
    return slot;
  }

  /** A request of the session starts; the function returned marks its end (call it once the response is done). */
  begin(slot: SessionSlot, holds: boolean): () => void {
    slot.lastActiveMs = this.o.nowMs();
    if (holds) slot.inFlight++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (holds) slot.inFlight--;
      slot.lastActiveMs = this.o.nowMs();
    };
  }

  /** Ends a session once, whatever ends it first, and frees its server and transport. */
  async end(slot: SessionSlot, reason: EndReason): Promise<void> {
    if (slot.ended) return;
    slot.ended = true;
    this.all.delete(slot);
    removeFrom(this.byCapability, slot.owner.capabilityId, slot);
    removeFrom(this.byTenant, slot.owner.tenantId, slot);
    this.endedCount.inc({ reason });
    await slot.close().catch((error: unknown) => this.o.onError(error));
  }

  /** Ends the sessions whose token expired, and those no request touched for the idle time. */
  sweep(): void {
    const now = this.o.nowMs();
    for (const slot of this.all) {
      if (slot.owner.expiresAtMs <= now) void this.end(slot, 'expired');
      else if (slot.inFlight === 0 && slot.lastActiveMs + this.o.limits.idleMs <= now) void this.end(slot, 'idle');
    }
  }

  /** A revoked tree arrives as a burst of entries: one pass over the sessions answers them all. */
  private checkRevocationsSoon(): void {
    if (this.revocationCheckPending) return;
    this.revocationCheckPending = true;
    setImmediate(() => {
      this.revocationCheckPending = false;
      for (const slot of this.all) if (this.revoked(slot)) void this.end(slot, 'revoked');
    });
  }

  private revoked(slot: SessionSlot): boolean {
    return slot.owner.lineage.some((id) => this.o.isRevoked(id));
  }

  private ownerOf(caller: CapabilityPrincipal): SessionOwner {
    const parent = this.o.parentOf(caller.token);
    return {
      capabilityId: caller.capability_id,
      tenantId: caller.tenant_id,
      lineage: [caller.capability_id, caller.root_id, ...(parent === undefined ? [] : [parent])],
      expiresAtMs: caller.expires_at_ms,
    };
  }

  private full(scope: Set<SessionSlot> | undefined, limit: number, quota: Quota): SessionRefusal | undefined {
    if (!scope || scope.size < limit) return undefined;
    return { quota, limit, retryAfterMs: this.soonestEnd(scope) };
  }

  /** How long until a session of the scope ends by itself if nothing touches it; undefined when none can. */
  private soonestEnd(scope: Set<SessionSlot>): number | undefined {
    let soonest = Number.POSITIVE_INFINITY;
    for (const slot of scope) {
      const idleAt = slot.inFlight === 0 ? slot.lastActiveMs + this.o.limits.idleMs : Number.POSITIVE_INFINITY;
      soonest = Math.min(soonest, idleAt, slot.owner.expiresAtMs);
    }
    return Number.isFinite(soonest) ? Math.max(0, soonest - this.o.nowMs()) : undefined;
  }
}

function addTo(index: Map<string, Set<SessionSlot>>, key: string, slot: SessionSlot): void {
  const set = index.get(key) ?? new Set<SessionSlot>();
  set.add(slot);
  index.set(key, set);
}

function removeFrom(index: Map<string, Set<SessionSlot>>, key: string, slot: SessionSlot): void {
  const set = index.get(key);
  if (!set) return;
  set.delete(slot);
  if (set.size === 0) index.delete(key);
}
