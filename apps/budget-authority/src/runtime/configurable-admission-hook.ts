// The admission policy hook the authority runs with. By default it allows everything and
// reserves nothing. With fault injection on, a test can make it reserve a runtime lease
// per request, fail the lease release, or hold reservations until released, and read
// its counters: what the seed's runtime admission hooks did inside the kernel.
import type { AdmissionHook, AdmissionRequest, AdmissionVerdict, LeaseRef } from '@tally/budget-application';

export interface HookBehaviour {
  /** Reserve a runtime lease `lease-{request_id}-{n}` at admission. */
  readonly lease: boolean;
  readonly release: 'release' | 'fail';
  /** Hold every reservation until `unblock()`: a hold stays authorized and uncaptured meanwhile. */
  readonly block: boolean;
}

export interface HookCounters {
  reserved: number;
  released: number;
  release_failed: number;
  blocked: number;
}

const DEFAULT: HookBehaviour = { lease: false, release: 'release', block: false };

export class ConfigurableAdmissionHook implements AdmissionHook {
  readonly name = 'configurable';
  readonly counters: HookCounters = { reserved: 0, released: 0, release_failed: 0, blocked: 0 };
  /** Lease ids reserved and not yet released. */
  readonly open = new Set<string>();
  private behaviour: HookBehaviour = DEFAULT;
  private waiting: Array<() => void> = [];

  /** Allows at once and leases nothing unless a test asked it to. */
  get passive(): boolean {
    return !this.behaviour.lease && !this.behaviour.block;
  }

  configure(behaviour: Partial<HookBehaviour>): void {
    this.behaviour = { ...this.behaviour, ...behaviour };
    if (!this.behaviour.block) this.unblock();
  }

  reset(): void {
    this.behaviour = DEFAULT;
    this.unblock();
    Object.assign(this.counters, { reserved: 0, released: 0, release_failed: 0, blocked: 0 });
    this.open.clear();
  }

  unblock(): void {
    for (const wake of this.waiting) wake();
    this.waiting = [];
  }

  async reserve(request: AdmissionRequest): Promise<AdmissionVerdict> {
    if (this.behaviour.block) {
      this.counters.blocked++;
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    if (!this.behaviour.lease) return { outcome: 'allow' };
    this.counters.reserved++;
    const leaseId = `lease-${request.request_id}-${this.counters.reserved}`;
    this.open.add(leaseId);
    return { outcome: 'allow', lease_id: leaseId };
  }

  async release(lease: LeaseRef): Promise<void> {
    if (this.behaviour.release === 'fail') {
      this.counters.release_failed++;
      throw new Error('runtime lease release could not be confirmed');
    }
    this.counters.released++;
    this.open.delete(lease.lease_id);
  }
}
