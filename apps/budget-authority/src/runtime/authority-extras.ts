// Two authority settings the shared config schema does not carry yet: which payment rail
// to use and whether test-only fault injection is on. They are read from the environment
// and validated at boot like any other setting (docs/adr/0006-fault-injection.md): fault
// injection is refused unless the rail is the simulated one.
import { ConfigError } from '@tally/platform-app';

export const PAYMENT_RAILS = ['simulated'] as const;
export type PaymentRailKind = (typeof PAYMENT_RAILS)[number];

export interface AuthorityExtras {
  readonly paymentRail: PaymentRailKind;
  readonly faultInjection: boolean;
}

type Env = Readonly<Record<string, string | undefined>>;

export function loadAuthorityExtras(env: Env = process.env): AuthorityExtras {
  const problems: string[] = [];
  const rail = env['TALLY_PAYMENT_RAIL'] ?? 'simulated';
  if (!(PAYMENT_RAILS as readonly string[]).includes(rail)) problems.push(`authority.payment_rail: must be one of ${PAYMENT_RAILS.join(', ')} (from TALLY_PAYMENT_RAIL)`);
  const flag = env['TALLY_FAULT_INJECTION'] ?? 'false';
  if (flag !== 'true' && flag !== 'false') problems.push('authority.fault_injection: must be true or false (from TALLY_FAULT_INJECTION)');
  const faultInjection = flag === 'true';
  if (faultInjection && rail !== 'simulated') problems.push('authority.fault_injection: test-only fault injection needs the simulated payment rail (from TALLY_FAULT_INJECTION)');
  if (problems.length > 0) throw new ConfigError(problems);
  return { paymentRail: rail as PaymentRailKind, faultInjection };
}
