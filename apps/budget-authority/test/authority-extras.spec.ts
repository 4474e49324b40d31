// Issue 8: fault injection is refused at boot with any payment rail but the simulated one
// and with OIDC, naming the setting (the schema knows only the simulated rail today, so the
// rule is proved on the loaded configuration itself, as the boot passes it).
import { describe, expect, it } from '@jest/globals';
import { TallyConfig } from '@tally/platform-app';
import { loadAuthorityExtras } from '../src/runtime/authority-extras.js';

const configWith = (authority: Record<string, unknown>, oidc: unknown[] = []): TallyConfig => {
  const config = new TallyConfig();
  Object.assign(config.authority, authority);
  config.auth.oidc = oidc as TallyConfig['auth']['oidc'];
  return config;
};

describe('Issue 8: fault injection boot rules', () => {
  it('Issue 8: on with the simulated rail and no OIDC it loads; off it always loads', () => {
    expect(loadAuthorityExtras(configWith({ fault_injection: true })).faultInjection).toBe(true);
    expect(loadAuthorityExtras(configWith({ fault_injection: false, payment_rail: 'acme-pay' })).faultInjection).toBe(
      false,
    );
  });

  it('Issue 8: a non-simulated rail or an OIDC issuer refuses it, naming authority.fault_injection', () => {
    expect(() => loadAuthorityExtras(configWith({ fault_injection: true, payment_rail: 'acme-pay' }))).toThrow(
      /authority\.fault_injection: .*simulated payment rail/,
    );
    expect(() =>
      loadAuthorityExtras(configWith({ fault_injection: true }, [{ issuer: 'https://idp.example', audience: 'a' }])),
    ).toThrow(/authority\.fault_injection: .*OIDC/);
  });

  it('ADR 0052: the http payment rail needs its URL, naming authority.payment_rail_url', () => {
    expect(() => loadAuthorityExtras(configWith({ payment_rail: 'http' }))).toThrow(/authority\.payment_rail_url/);
    const rail = loadAuthorityExtras(configWith({ payment_rail: 'http', payment_rail_url: 'http://127.0.0.1:9' }));
    expect(rail.paymentRail).toBe('http');
    expect(() =>
      loadAuthorityExtras(configWith({ fault_injection: true, payment_rail: 'http', payment_rail_url: 'http://x' })),
    ).toThrow(/authority\.fault_injection/);
  });
});
