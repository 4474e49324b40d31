// One authority replica's PaymentRail: every call is a request to the shared simulated rail.
import type { PaymentRail } from '@tally/budget-application';
import { remoteCall, type Wire } from '../core/remote.js';
import type { Owner } from '../core/scheduler.js';
import type { SimRail } from './sim-rail.js';

export function scheduledRail(rail: SimRail, wire: Wire, owner: Owner): PaymentRail {
  const call = <T>(what: string, reference: string, serve: () => T) =>
    remoteCall(wire, owner, `${owner.name} rail.${what} ${reference}`, serve);
  return {
    authorize: (request) => call('authorize', request.reference, () => rail.authorize(request)),
    capture: (request) => call('capture', request.reference, () => rail.capture(request)),
    release: (request) => call('release', request.reference, () => rail.release(request)),
    refund: (request) => call('refund', request.reference, () => rail.refund(request)),
    settlementState: (reference) => call('state', reference, () => rail.settlementState(reference)),
  };
}
