// Builds the BudgetAuthority of this process from the host's NATS and config: the
// JetStream event store (behind a switch for test-only lost acknowledgements), the
// Ed25519 signer, the payment rail (simulated, or over HTTP) and the admission hook, with every limit
// named. One instance per process: it holds the per-tree cache and queue.
import { randomBytes } from 'node:crypto';
import {
  type BudgetAuthority,
  budgetEventRegistry,
  type BudgetAuthorityLimits,
  type PaymentRail,
  type Signer,
} from '@tally/budget-application';
import { Ed25519Signer, HttpPaymentRail, SigningKeyring, SimulatedPaymentRail } from '@tally/budget-infrastructure';
import { CAPABILITY_TTL_SECONDS_MAX } from '@tally/contracts';
import type { HostContext, TallyConfig } from '@tally/platform-app';
import { JetStreamEventStore } from '@tally/platform-jetstream';
import type { AuthorityExtras } from './authority-extras.js';
import { authorityCounters, MeteredBudgetAuthority, registerLedgerGauges } from './authority-metrics.js';
import { ConfigurableAdmissionHook } from './configurable-admission-hook.js';
import { faultTargets, type FaultTargets } from './fault-targets.js';
import { SwitchableEventStore } from './switchable-event-store.js';

export interface AuthorityRuntime {
  readonly authority: BudgetAuthority;
  readonly faults: FaultTargets | undefined;
}

export function authorityLimits(config: TallyConfig): BudgetAuthorityLimits {
  const a = config.authority;
  return {
    appendAttemptsMax: a.append_attempts_max,
    truthReadAttemptsMax: 5,
    truthReadDelayMs: 100,
    treeCacheMax: 10_000,
    // A hot tree is served in order inside one process; a burst beyond this is shed with QueueFull.
    queueWaitingMax: 8_192,
    holdTtlMs: a.hold_ttl_ms,
    unsettledGraceMs: a.unsettled_grace_ms,
    nonceTtlMs: a.nonce_ttl_seconds * 1000,
    requireExecutionNonce: a.require_execution_nonce,
    delegationDepthMax: 16,
    grantsPerCapabilityMax: 64,
    // One bound with the wire's ttl_seconds, which the revocations bucket's retention rests on (ADR 0049).
    capabilityTtlMaxMs: CAPABILITY_TTL_SECONDS_MAX * 1000,
    expireHoldsPerStepMax: a.sweep_batch_max,
    mutationListLimitMax: 1_000,
    receiptAppendAttemptsMax: 3,
    holdIncreasesMax: a.hold_increases_max,
    concurrencyRetryAfterMs: a.concurrency_retry_after_ms,
    captureWithAuthorize: a.capture_with_authorize,
  };
}

export function authoritySigner(config: TallyConfig): Ed25519Signer {
  const a = config.authority;
  return a.signing_key ? Ed25519Signer.fromSeed(a.signing_key) : Ed25519Signer.loadOrCreate(a.signing_key_path);
}

/** The boot key and the keyring directory's keys (ADR 0014). */
export function authorityKeyring(config: TallyConfig): SigningKeyring {
  return SigningKeyring.open(authoritySigner(config), config.authority.keyring_dir);
}

/** Delegates to the current simulated rail, so a test can start over with a fresh one. */
class RailSwitch implements PaymentRail {
  constructor(public current: SimulatedPaymentRail) {}
  authorize: PaymentRail['authorize'] = (request) => this.current.authorize(request);
  capture: PaymentRail['capture'] = (request) => this.current.capture(request);
  release: PaymentRail['release'] = (request) => this.current.release(request);
  refund: PaymentRail['refund'] = (request) => this.current.refund(request);
  settlementState: PaymentRail['settlementState'] = (reference) => this.current.settlementState(reference);
}

export function buildAuthorityRuntime(ctx: HostContext, signer: Signer, extras: AuthorityExtras): AuthorityRuntime {
  const names = ctx.nats.names;
  const jetStreamStore = new JetStreamEventStore(ctx.nats.js, ctx.nats.jsm, {
    stream: names.budgetEventsStream,
    registry: budgetEventRegistry(),
    publishTimeoutMs: ctx.config.nats.publish_timeout_ms,
    loadEventsMax: 1_000_000,
    loadIdleTimeoutMs: 5_000,
  });
  const store = new SwitchableEventStore(jetStreamStore);
  const newRail = () => new SimulatedPaymentRail({ mode: ctx.config.authority.payment_mode });
  const simulated = new RailSwitch(newRail());
  const rail: PaymentRail =
    extras.paymentRail === 'http'
      ? new HttpPaymentRail({
          baseUrl: ctx.config.authority.payment_rail_url!,
          timeoutMs: ctx.config.authority.payment_rail_timeout_ms,
        })
      : simulated;
  const hook = new ConfigurableAdmissionHook();
  const authority = new MeteredBudgetAuthority(
    {
      store,
      subjectOf: (rootId) => names.budgetEventSubject(rootId),
      clock: { nowMs: () => Date.now() },
      ids: { newId: () => randomBytes(12).toString('hex') },
      rail,
      signer,
      hook,
    },
    authorityLimits(ctx.config),
    authorityCounters(ctx.metrics.registry),
  );
  registerLedgerGauges(ctx.metrics.registry, ctx.dataSource, ctx.nats.jsm, names.budgetEventsStream);
  // Loud on purpose: an installation that sees this line in production has a test bench exposed.
  if (extras.faultInjection)
    ctx.logger.event(
      'warn',
      'FAULT INJECTION IS ON (authority.fault_injection / TALLY_FAULT_INJECTION): POST /v1/test/faults lets an admin steer the simulated rail, drop acknowledgements and kill the projection thread. Test benches only; never in production (docs/adr/0006).',
      { fault_injection: true },
    );
  const faults = extras.faultInjection
    ? faultTargets(
        () => simulated.current,
        store,
        hook,
        () => (simulated.current = newRail()),
      )
    : undefined;
  return { authority, faults };
}
