// The admission hook of a run that takes runtime leases (ADR 0041's stepwise path): a remote
// policy service that reserves a lease per hold, sometimes denies, and sometimes cannot
// confirm a release. It keeps every lease, so the checker can prove that each lease of a
// hold that was not dispatched was released, or its release at least attempted.
import type { AdmissionHook, AdmissionRequest, AdmissionVerdict, LeaseRef } from '@tally/budget-application';
import { remoteCall, type Wire } from '../core/remote.js';
import type { Owner } from '../core/scheduler.js';
import type { Faults } from '../world/faults.js';

export interface LeaseRecord {
  readonly lease_id: string;
  readonly hold_id: string;
  released: boolean;
  releaseAttempts: number;
}

export class SimLeases {
  readonly leases = new Map<string, LeaseRecord>();
  private next = 0;

  constructor(private readonly faults: Faults) {}

  reserve(request: AdmissionRequest): AdmissionVerdict {
    if (this.faults.strikes('hook', 0.5)) return { outcome: 'deny', reason: 'simulated policy refusal' };
    const lease_id = `lease_${++this.next}`;
    this.leases.set(lease_id, { lease_id, hold_id: request.hold_id, released: false, releaseAttempts: 0 });
    return { outcome: 'allow', lease_id };
  }

  release(lease: LeaseRef): void {
    const record = this.leases.get(lease.lease_id);
    if (record) record.releaseAttempts++;
    if (this.faults.strikes('hook', 0.5)) throw new Error('simulated release failure');
    if (record) record.released = true;
  }
}

export function scheduledHook(leases: SimLeases, wire: Wire, owner: Owner): AdmissionHook {
  return {
    name: 'sim-leases',
    reserve: (request) =>
      remoteCall(wire, owner, `${owner.name} hook.reserve ${request.hold_id}`, () => leases.reserve(request)),
    release: (lease) =>
      remoteCall(wire, owner, `${owner.name} hook.release ${lease.lease_id}`, () => leases.release(lease)),
  };
}
