// Two authority settings with a rule between them: which payment rail runs, and whether
// test-only fault injection is on (docs/adr/0006-fault-injection.md). Fault injection is
// refused at boot unless the rail is the simulated one and no OIDC issuer is configured;
// the HTTP rail needs its URL.
import { ConfigError, type TallyConfig } from '@tally/platform-app';

export type PaymentRailKind = TallyConfig['authority']['payment_rail'];

export interface AuthorityExtras {
  readonly paymentRail: PaymentRailKind;
  readonly faultInjection: boolean;
}

export function loadAuthorityExtras(config: TallyConfig): AuthorityExtras {
  const { payment_rail: paymentRail, fault_injection: faultInjection } = config.authority;
  if (paymentRail === 'http' && !config.authority.payment_rail_url) {
    throw new ConfigError(["authority.payment_rail_url: the http payment rail needs the rail's base URL"]);
  }
  if (faultInjection && paymentRail !== 'simulated') {
    throw new ConfigError(['authority.fault_injection: test-only fault injection needs the simulated payment rail']);
  }
  // An OIDC issuer means people sign in: that is a production configuration, never a test bench.
  if (faultInjection && config.auth.oidc.length > 0) {
    throw new ConfigError(['authority.fault_injection: test-only fault injection is refused when OIDC is configured']);
  }
  return { paymentRail, faultInjection };
}
