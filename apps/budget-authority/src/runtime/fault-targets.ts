// What the test-only faults endpoint can steer in a running authority, and its report.
import type { SimulatedPaymentRail } from '@tally/budget-infrastructure';
import type { ConfigurableAdmissionHook } from './configurable-admission-hook.js';
import type { SwitchableEventStore } from './switchable-event-store.js';

export const FAULT_TARGETS = Symbol('FAULT_TARGETS');

export interface FaultTargets {
  readonly rail: SimulatedPaymentRail;
  readonly store: SwitchableEventStore;
  readonly hook: ConfigurableAdmissionHook;
  reset(): void;
  report(): Record<string, unknown>;
}

export function faultTargets(
  rail: () => SimulatedPaymentRail,
  store: SwitchableEventStore,
  hook: ConfigurableAdmissionHook,
  resetRail: () => void,
): FaultTargets {
  return {
    get rail() {
      return rail();
    },
    store,
    hook,
    reset() {
      resetRail();
      store.loseAcks(undefined);
      hook.reset();
    },
    report() {
      return {
        rail: { ...rail().counters },
        lost_acks: [...store.lost()],
        hook: { ...hook.counters, open_leases: [...hook.open] },
      };
    },
  };
}
