// The budget ledger projection: capabilities with revocation state and parent links,
// usage per (capability, grant), mutation events (B18), holds, ambiguities and signed
// receipts (B17), folded from TALLY_BUDGET_EVENTS. It never throws on a recorded event:
// a fact it cannot place (an event for a hold it never saw) is skipped and counted.
import { storedEventId } from '@tally/budget-domain';
import type { StoredEvent } from '@tally/eventing';
import type { Projection } from '@tally/platform-typeorm';
import type { EntityManager } from 'typeorm';
import { AmbiguityRow, BUDGET_TABLES, CapabilityRow, HoldRow, ReceiptRow } from './entities.js';
import { LedgerBatch, zeroUsage } from './ledger-batch.js';
import { ReceiptChains } from './receipt-chains.js';
import type {
  AmbiguityRecordedWire,
  AmbiguityResolvedWire,
  CapabilityIssuedWire,
  CapabilityRevokedWire,
  HoldAuthorizedWire,
  HoldMutationWire,
  HoldStepWire,
  ReceiptRecordedWire,
} from './wire.js';
import { money, optionalMoney, plainJson } from './wire.js';

export const BUDGET_LEDGER_PROJECTION = 'budget-ledger';

/** The part of the authority's keyring the projection needs: re-signing a recorded body with the key it names. */
export interface ReceiptSigner {
  /** The signature by `keyId`, or undefined when this machine does not hold that key. */
  signAs(keyId: string, value: unknown): string | undefined;
}

export interface BudgetLedgerOptions {
  readonly stream: string;
  readonly filterSubject: string;
  /** When set, every receipt body signed with this key is re-signed and compared (B17 replay check). */
  readonly signer?: ReceiptSigner;
  /** Called for a recorded event the fold cannot place; it is skipped, never thrown. */
  readonly onOrphan?: (event: StoredEvent, why: string) => void;
}

const HOLD_EVENTS = new Set([
  'InvocationCaptured',
  'HoldReversed',
  'CaptureCancelled',
  'ExposureReleased',
  'SpendSettled',
  'HoldRetained',
  'InvocationAdmitted',
  'HoldIncreased',
  'SpendCorrected',
]);

export function budgetLedgerProjection(options: BudgetLedgerOptions): Projection {
  return {
    name: BUDGET_LEDGER_PROJECTION,
    stream: options.stream,
    filterSubject: options.filterSubject,
    tables: Object.values(BUDGET_TABLES),
    async apply(manager: EntityManager, events: readonly StoredEvent[]): Promise<void> {
      const batch = new LedgerBatch(manager);
      const chains = new ReceiptChains(manager);
      await batch.preload(...idsNamedBy(events));
      await chains.preload(ReceiptChains.keysNamedBy(events));
      for (const stored of events) applyEvent(batch, chains, stored, options);
      await batch.flush();
      await chains.flush();
    },
  };
}

function idsNamedBy(events: readonly StoredEvent[]): [Set<string>, Set<string>, Set<string>] {
  const capabilities = new Set<string>();
  const holds = new Set<string>();
  const ambiguities = new Set<string>();
  for (const { event } of events) {
    const p = event.payload as Record<string, unknown>;
    if (event.type === 'CapabilityIssued') {
      capabilities.add(p['capability_id'] as string);
      if (typeof p['parent_id'] === 'string') capabilities.add(p['parent_id']);
    }
    if (event.type === 'CapabilityRevoked') for (const id of p['revoked_ids'] as string[]) capabilities.add(id);
    // A new hold's usage lands on its whole chain, whose rows may come from earlier batches.
    if (event.type === 'HoldAuthorized')
      for (const ref of p['chain'] as { capability_id: string }[]) capabilities.add(ref.capability_id);
    if (typeof p['hold_id'] === 'string') holds.add(p['hold_id']);
    if (typeof p['ambiguity_id'] === 'string') ambiguities.add(p['ambiguity_id']);
  }
  return [capabilities, holds, ambiguities];
}

function applyEvent(
  batch: LedgerBatch,
  chains: ReceiptChains,
  stored: StoredEvent,
  options: BudgetLedgerOptions,
): void {
  const { event, sequence } = stored;
  const payload = event.payload as unknown;
  switch (event.type) {
    case 'CapabilityIssued':
      chains.issued(stored);
      return issue(batch, payload as CapabilityIssuedWire, sequence);
    case 'CapabilityRevoked':
      return revoke(batch, payload as CapabilityRevokedWire);
    case 'HoldAuthorized':
      return authorize(
        batch,
        payload as HoldAuthorizedWire,
        event.eventId,
        event.aggregateId,
        sequence,
        stored.position ?? 0,
      );
    case 'AmbiguityRecorded':
      return recordAmbiguity(batch, payload as AmbiguityRecordedWire, sequence, stored, options);
    case 'AmbiguityResolved':
      return resolveAmbiguity(batch, payload as AmbiguityResolvedWire, sequence, stored, options);
    case 'ReceiptRecorded':
      return recordReceipt(batch, chains, payload as ReceiptRecordedWire, stored, options.signer);
    default:
      if (HOLD_EVENTS.has(event.type)) return holdStep(batch, stored, options);
  }
}

function issue(batch: LedgerBatch, data: CapabilityIssuedWire, sequence: number): void {
  batch.putCapability(
    Object.assign(new CapabilityRow(), {
      capabilityId: data.capability_id,
      rootId: data.root_id,
      parentId: data.parent_id ?? null,
      tenantId: data.tenant_id ?? 'default',
      subjectPublicKey: data.subject_public_key,
      depth: data.depth,
      issuedAtMs: data.issued_at_ms,
      expiresAtMs: data.expires_at_ms,
      grants: plainJson(data.grants),
      budgetUnits: optionalMoney(data.budget_units),
      revokedAtMs: null,
      revokedVia: null,
      issuedSequence: sequence,
    }),
  );
  // Every grant has a usage row from the start, so usage reads list all grants, used or not.
  data.grants.forEach((grant, index) => {
    batch.putUsage(
      zeroUsage(
        data.root_id,
        { capability_id: data.capability_id, grant_index: index },
        grant.currency ?? null,
        sequence,
      ),
    );
  });
}

function revoke(batch: LedgerBatch, data: CapabilityRevokedWire): void {
  for (const id of data.revoked_ids) {
    const row = batch.capabilities.get(id);
    if (!row || row.revokedAtMs !== null) continue;
    batch.putCapability({ ...row, revokedAtMs: data.at_ms, revokedVia: data.capability_id });
  }
}

function authorize(
  batch: LedgerBatch,
  data: HoldAuthorizedWire,
  eventId: string,
  rootId: string,
  sequence: number,
  position: number,
): void {
  const hold = Object.assign(new HoldRow(), {
    holdId: data.hold_id,
    rootId,
    requestId: data.request_id,
    capabilityId: data.capability_id,
    grantIndex: data.grant_index,
    chain: plainJson(data.chain.map((ref) => ({ capability_id: ref.capability_id, grant_index: ref.grant_index }))),
    exposureUnits: money(data.exposure_units),
    monetary: data.monetary ? 1 : 0,
    preflight: data.preflight ? 1 : 0,
    status: 'authorized',
    expiresAtMs: data.expires_at_ms,
    authorizeCommitIndex: sequence,
    captureCommitIndex: null,
    realizedUnits: null,
    lastSequence: sequence,
  });
  batch.putHold(hold);
  batch.mutate(hold, {
    eventId,
    kind: data.kind,
    cause: null,
    commitIndex: sequence,
    commitPosition: position,
    occurredAtMs: data.at_ms,
    invocations: 1,
    exposedUnits: hold.exposureUnits,
    realizedUnits: 0n,
  });
}

/** Status after each hold event; the usage deltas mirror the domain's evolve. */
function holdStep(batch: LedgerBatch, stored: StoredEvent, options: BudgetLedgerOptions): void {
  const { event, sequence } = stored;
  const data = event.payload as unknown as HoldMutationWire & HoldStepWire;
  const hold = batch.holds.get(data.hold_id);
  if (!hold) return options.onOrphan?.(stored, `no hold ${data.hold_id}`);
  const base = {
    eventId: storedEventId(event.type, event.eventId, data, sequence),
    kind: data.kind,
    cause: data.cause ?? null,
    commitIndex: sequence,
    commitPosition: stored.position ?? 0,
    occurredAtMs: data.at_ms,
  };
  const next: HoldRow = { ...hold, lastSequence: sequence };
  switch (event.type) {
    case 'InvocationCaptured':
      Object.assign(next, { status: 'captured', captureCommitIndex: sequence });
      batch.mutate(next, { ...base, invocations: 0, exposedUnits: 0n, realizedUnits: 0n });
      break;
    case 'HoldReversed':
    case 'CaptureCancelled':
    case 'ExposureReleased':
      next.status =
        event.type === 'HoldReversed' ? 'reversed' : event.type === 'CaptureCancelled' ? 'cancelled' : 'released';
      batch.mutate(next, { ...base, invocations: -1, exposedUnits: -hold.exposureUnits, realizedUnits: 0n });
      break;
    case 'SpendSettled': {
      const realized = money(data.realized_units);
      // Absent on events from before ADR 0043: they booked within the limits, with no overrun.
      const overrunUnits = money(data.hold_overrun_units);
      Object.assign(next, { status: 'settled', realizedUnits: realized });
      batch.mutate(next, {
        ...base,
        invocations: 0,
        exposedUnits: -hold.exposureUnits,
        realizedUnits: realized,
        overrunUnits,
      });
      break;
    }
    case 'SpendCorrected': {
      // A late settlement of a hold the sweep realized in full (ADR 0047): the spend moves to the reported cost.
      const realized = money(data.realized_units);
      next.realizedUnits = realized;
      batch.mutate(next, {
        ...base,
        cause: data.outcome ?? null,
        invocations: data.invocation_delta ?? 0,
        exposedUnits: 0n,
        realizedUnits: realized - money(data.previous_realized_units),
        overrunUnits: money(data.hold_overrun_units),
      });
      break;
    }
    case 'HoldRetained':
      next.status = 'retained';
      break;
    case 'InvocationAdmitted':
      next.status = 'admitted';
      break;
    case 'HoldIncreased': {
      // An incremental hold: more exposure on the same invocation.
      const amount = money(data.amount_units!);
      next.exposureUnits = hold.exposureUnits + amount;
      batch.mutate(next, { ...base, invocations: 0, exposedUnits: amount, realizedUnits: 0n });
      break;
    }
  }
  batch.putHold(next);
}

function recordAmbiguity(
  batch: LedgerBatch,
  data: AmbiguityRecordedWire,
  sequence: number,
  stored: StoredEvent,
  options: BudgetLedgerOptions,
): void {
  const hold = batch.holds.get(data.hold_id);
  if (!hold) return options.onOrphan?.(stored, `no hold ${data.hold_id}`);
  batch.putAmbiguity(
    Object.assign(new AmbiguityRow(), {
      ambiguityId: data.ambiguity_id,
      rootId: hold.rootId,
      holdId: data.hold_id,
      capabilityId: hold.capabilityId,
      kind: data.kind,
      eventId: data.event_id ?? null,
      reference: data.reference ?? null,
      resolution: null,
      railState: null,
      recordedSequence: sequence,
      resolvedSequence: null,
    }),
  );
}

function resolveAmbiguity(
  batch: LedgerBatch,
  data: AmbiguityResolvedWire,
  sequence: number,
  stored: StoredEvent,
  options: BudgetLedgerOptions,
): void {
  const row = batch.ambiguities.get(data.ambiguity_id);
  if (!row) return options.onOrphan?.(stored, `no ambiguity ${data.ambiguity_id}`);
  batch.putAmbiguity({
    ...row,
    resolution: data.resolution,
    railState: data.rail_state ?? null,
    resolvedSequence: sequence,
  });
}

function recordReceipt(
  batch: LedgerBatch,
  chains: ReceiptChains,
  data: ReceiptRecordedWire,
  stored: StoredEvent,
  signer: ReceiptSigner | undefined,
): void {
  const rootId = stored.event.aggregateId;
  const body = JSON.parse(JSON.stringify(data.receipt)) as Record<string, unknown>;
  let check = 'foreign_key';
  const resigned = signer?.signAs(data.key_id, body);
  if (resigned !== undefined) check = resigned === data.signature ? 'resigned' : 'mismatch';
  const chain = chains.record({ ...body, signature: data.signature }, rootId);
  batch.receipts.push(
    Object.assign(new ReceiptRow(), {
      receiptId: data.receipt_id,
      rootId,
      commandId: data.command_id,
      requestId: data.request_id ?? null,
      holdId: data.hold_id ?? null,
      capabilityId: typeof body['capability_id'] === 'string' ? body['capability_id'] : null,
      verdict: typeof body['verdict'] === 'string' ? body['verdict'] : 'deny',
      body: JSON.stringify(body),
      signature: data.signature,
      keyId: data.key_id,
      signatureCheck: check,
      decision: data.decision === undefined ? null : JSON.stringify(data.decision),
      commitIndex: stored.sequence,
      commitPosition: stored.position ?? 0,
      chainIndex: chain.chainIndex,
      chainCheck: chain.check,
      recordedAtMs: data.at_ms,
    }),
  );
}
