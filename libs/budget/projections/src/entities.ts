// The budget projection tables. Money is bigint minor units read back exactly
// (moneyColumn); stream sequences and times in epoch milliseconds are bigint read back
// as safe numbers; flags are 0/1 integers so a digest is the same on both databases.
import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { countColumn, moneyColumn, sequenceColumn } from '@tally/platform-typeorm';

export const BUDGET_TABLES = {
  capabilities: 'budget_capabilities',
  usage: 'budget_usage',
  holds: 'budget_holds',
  mutations: 'budget_mutations',
  receipts: 'budget_receipts',
  ambiguities: 'budget_ambiguities',
  receiptChains: 'budget_receipt_chains',
} as const;

/** Ids are bounded by the wire DTOs (request ids ≤ 256, command ids ≤ 512) plus their fixed prefixes. */
export const ID_LENGTH = 1024;
export const CAPABILITY_ID_LENGTH = 128;
/** `tree:` and a root id, or a capability id. */
export const CHAIN_KEY_LENGTH = CAPABILITY_ID_LENGTH + 8;

/** Tenant ids are at most 63 characters (the directory's pattern). */
export const TENANT_ID_LENGTH = 64;

@Entity({ name: BUDGET_TABLES.capabilities })
@Index('budget_capabilities_tenant', ['tenantId', 'capabilityId'])
export class CapabilityRow {
  @PrimaryColumn({ name: 'capability_id', type: 'varchar', length: CAPABILITY_ID_LENGTH }) capabilityId!: string;
  /** The owning tenant: every tenant-scoped read joins on it. */
  @Column({ name: 'tenant_id', type: 'varchar', length: TENANT_ID_LENGTH, default: 'default' }) tenantId!: string;
  @Column({ name: 'root_id', type: 'varchar', length: CAPABILITY_ID_LENGTH }) rootId!: string;
  @Column({ name: 'parent_id', type: 'varchar', length: CAPABILITY_ID_LENGTH, nullable: true }) parentId!:
    string | null;
  @Column({ name: 'subject_public_key', type: 'varchar', length: 128 }) subjectPublicKey!: string;
  @Column(countColumn()) depth!: number;
  @Column(sequenceColumn({ name: 'issued_at_ms' })) issuedAtMs!: number;
  @Column(sequenceColumn({ name: 'expires_at_ms' })) expiresAtMs!: number;
  /** The stored grants as JSON, money in wire form. */
  @Column({ type: 'text' }) grants!: string;
  @Column(moneyColumn({ name: 'budget_units', nullable: true })) budgetUnits!: bigint | null;
  @Column(sequenceColumn({ name: 'revoked_at_ms', nullable: true })) revokedAtMs!: number | null;
  /** The capability whose revocation reached this one (itself, or an ancestor). */
  @Column({ name: 'revoked_via', type: 'varchar', length: CAPABILITY_ID_LENGTH, nullable: true }) revokedVia!:
    string | null;
  @Column(sequenceColumn({ name: 'issued_sequence' })) issuedSequence!: number;
}

@Entity({ name: BUDGET_TABLES.usage })
export class UsageRow {
  @PrimaryColumn({ name: 'capability_id', type: 'varchar', length: CAPABILITY_ID_LENGTH }) capabilityId!: string;
  @PrimaryColumn(countColumn({ name: 'grant_index' })) grantIndex!: number;
  @Column({ name: 'root_id', type: 'varchar', length: CAPABILITY_ID_LENGTH }) rootId!: string;
  @Column(countColumn({ name: 'invocation_count' })) invocationCount!: number;
  @Column(moneyColumn({ name: 'exposed_cost_units' })) exposedCostUnits!: bigint;
  @Column(moneyColumn({ name: 'realized_cost_units' })) realizedCostUnits!: bigint;
  @Column(moneyColumn({ name: 'committed_cost_units' })) committedCostUnits!: bigint;
  /** Charges beyond their holds booked on this grant (ADR 0043); 0 on rows from before it. */
  @Column(moneyColumn({ name: 'overrun_cost_units', default: 0 })) overrunCostUnits!: bigint;
  @Column({ type: 'varchar', length: 16, nullable: true }) currency!: string | null;
  @Column(sequenceColumn({ name: 'last_sequence' })) lastSequence!: number;
}

@Entity({ name: BUDGET_TABLES.holds })
@Index('budget_holds_capability', ['capabilityId', 'grantIndex'])
export class HoldRow {
  @PrimaryColumn({ name: 'hold_id', type: 'varchar', length: ID_LENGTH }) holdId!: string;
  @Column({ name: 'root_id', type: 'varchar', length: CAPABILITY_ID_LENGTH }) rootId!: string;
  @Column({ name: 'request_id', type: 'varchar', length: ID_LENGTH }) requestId!: string;
  @Column({ name: 'capability_id', type: 'varchar', length: CAPABILITY_ID_LENGTH }) capabilityId!: string;
  @Column(countColumn({ name: 'grant_index' })) grantIndex!: number;
  /** The grant and every ancestor grant it narrows, nearest first, as JSON: spend counts against all. */
  @Column({ type: 'text' }) chain!: string;
  @Column(moneyColumn({ name: 'exposure_units' })) exposureUnits!: bigint;
  @Column(countColumn()) monetary!: number;
  @Column(countColumn()) preflight!: number;
  /** authorized, captured, admitted, reversed, cancelled, released, settled, retained. */
  @Column({ type: 'varchar', length: 16 }) status!: string;
  @Column(sequenceColumn({ name: 'expires_at_ms' })) expiresAtMs!: number;
  @Column(sequenceColumn({ name: 'authorize_commit_index' })) authorizeCommitIndex!: number;
  @Column(sequenceColumn({ name: 'capture_commit_index', nullable: true })) captureCommitIndex!: number | null;
  @Column(moneyColumn({ name: 'realized_units', nullable: true })) realizedUnits!: bigint | null;
  @Column(sequenceColumn({ name: 'last_sequence' })) lastSequence!: number;
}

@Entity({ name: BUDGET_TABLES.mutations })
@Index('budget_mutations_grant', ['capabilityId', 'grantIndex', 'commitIndex'])
export class MutationRow {
  @PrimaryColumn({ name: 'event_id', type: 'varchar', length: ID_LENGTH }) eventId!: string;
  @Column({ name: 'root_id', type: 'varchar', length: CAPABILITY_ID_LENGTH }) rootId!: string;
  @Column({ name: 'capability_id', type: 'varchar', length: CAPABILITY_ID_LENGTH }) capabilityId!: string;
  @Column(countColumn({ name: 'grant_index' })) grantIndex!: number;
  @Column({ type: 'varchar', length: 64 }) kind!: string;
  @Column({ name: 'hold_id', type: 'varchar', length: ID_LENGTH }) holdId!: string;
  @Column({ name: 'request_id', type: 'varchar', length: ID_LENGTH }) requestId!: string;
  /** Why an undo happened (nonce_preflight, pre_dispatch_cleanup, expired, reconciled, payment_declined, …). */
  @Column({ type: 'varchar', length: 32, nullable: true }) cause!: string | null;
  @Column(sequenceColumn({ name: 'commit_index' })) commitIndex!: number;
  /** The event's place within its commit: orders mutations that share a commit index. */
  @Column(countColumn({ name: 'commit_position' })) commitPosition!: number;
  @Column(sequenceColumn({ name: 'occurred_at_ms' })) occurredAtMs!: number;
  @Column(countColumn({ name: 'invocation_delta' })) invocationDelta!: number;
  @Column(moneyColumn({ name: 'exposed_delta_units' })) exposedDeltaUnits!: bigint;
  @Column(moneyColumn({ name: 'realized_delta_units' })) realizedDeltaUnits!: bigint;
}

@Entity({ name: BUDGET_TABLES.receipts })
@Index('budget_receipts_request', ['requestId'])
@Index('budget_receipts_order', ['commitIndex', 'commitPosition'])
@Index('budget_receipts_capability_order', ['capabilityId', 'commitIndex', 'commitPosition'])
export class ReceiptRow {
  @PrimaryColumn({ name: 'receipt_id', type: 'varchar', length: ID_LENGTH }) receiptId!: string;
  @Column({ name: 'root_id', type: 'varchar', length: CAPABILITY_ID_LENGTH }) rootId!: string;
  @Column({ name: 'command_id', type: 'varchar', length: ID_LENGTH }) commandId!: string;
  @Column({ name: 'request_id', type: 'varchar', length: ID_LENGTH, nullable: true }) requestId!: string | null;
  @Column({ name: 'hold_id', type: 'varchar', length: ID_LENGTH, nullable: true }) holdId!: string | null;
  @Column({ name: 'capability_id', type: 'varchar', length: CAPABILITY_ID_LENGTH, nullable: true }) capabilityId!:
    string | null;
  @Column({ type: 'varchar', length: 8 }) verdict!: string;
  /** The signed body as JSON. */
  @Column({ type: 'text' }) body!: string;
  @Column({ type: 'varchar', length: 256 }) signature!: string;
  @Column({ name: 'key_id', type: 'varchar', length: 64 }) keyId!: string;
  /** resigned: the projector re-signed the body to the recorded signature; mismatch; or foreign_key (another key signed it). */
  @Column({ name: 'signature_check', type: 'varchar', length: 16 }) signatureCheck!: string;
  @Column({ type: 'text', nullable: true }) decision!: string | null;
  @Column(sequenceColumn({ name: 'commit_index' })) commitIndex!: number;
  /** Its place in its commit: receipts of one group commit are ordered by it (the chain's order). */
  @Column(countColumn({ name: 'commit_position' })) commitPosition!: number;
  /** Its place in its chain (ADR 0030); null on receipts from before the chain. */
  @Column(countColumn({ name: 'chain_index', nullable: true })) chainIndex!: number | null;
  /** linked: index and prev_hash are what the stream before it says; broken; or unchained (from before the chain). */
  @Column({ name: 'chain_check', type: 'varchar', length: 16 }) chainCheck!: string;
  /** When the authority recorded it (the event's time), for exports `--since`. */
  @Column(sequenceColumn({ name: 'recorded_at_ms', nullable: true })) recordedAtMs!: number | null;
}

/** Where each receipt chain stands after the receipts projected so far: what the next one must link to. */
@Entity({ name: BUDGET_TABLES.receiptChains })
export class ReceiptChainRow {
  /** A capability id, or `tree:<root>` for the receipts of a tree that name no capability. */
  @PrimaryColumn({ name: 'chain_key', type: 'varchar', length: CHAIN_KEY_LENGTH }) chainKey!: string;
  @Column({ name: 'root_id', type: 'varchar', length: CAPABILITY_ID_LENGTH }) rootId!: string;
  @Column(countColumn({ name: 'next_index' })) nextIndex!: number;
  @Column({ name: 'last_hash', type: 'varchar', length: 64 }) lastHash!: string;
}

@Entity({ name: BUDGET_TABLES.ambiguities })
@Index('budget_ambiguities_hold', ['holdId'])
export class AmbiguityRow {
  @PrimaryColumn({ name: 'ambiguity_id', type: 'varchar', length: ID_LENGTH }) ambiguityId!: string;
  @Column({ name: 'root_id', type: 'varchar', length: CAPABILITY_ID_LENGTH }) rootId!: string;
  @Column({ name: 'hold_id', type: 'varchar', length: ID_LENGTH }) holdId!: string;
  @Column({ name: 'capability_id', type: 'varchar', length: CAPABILITY_ID_LENGTH }) capabilityId!: string;
  @Column({ type: 'varchar', length: 32 }) kind!: string;
  @Column({ name: 'event_id', type: 'varchar', length: ID_LENGTH, nullable: true }) eventId!: string | null;
  @Column({ type: 'varchar', length: ID_LENGTH, nullable: true }) reference!: string | null;
  @Column({ type: 'varchar', length: 64, nullable: true }) resolution!: string | null;
  @Column({ name: 'rail_state', type: 'varchar', length: 32, nullable: true }) railState!: string | null;
  @Column(sequenceColumn({ name: 'recorded_sequence' })) recordedSequence!: number;
  @Column(sequenceColumn({ name: 'resolved_sequence', nullable: true })) resolvedSequence!: number | null;
}

export const BUDGET_ENTITIES = [
  CapabilityRow,
  UsageRow,
  HoldRow,
  MutationRow,
  ReceiptRow,
  AmbiguityRow,
  ReceiptChainRow,
];
