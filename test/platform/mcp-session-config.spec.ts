// Proves ADR 0054's settings: the MCP session quotas and idle time have their documented defaults, and a value out of range stops the load naming the setting and where it came from.
import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from '@tally/platform-app';

describe('ADR 0054 MCP session settings', () => {
  it('ADR 0054 the MCP session quotas and idle time default to 10000, 64 per capability, 2500 per tenant and 15 minutes', () => {
    expect(loadConfig({}).orchestrator).toMatchObject({
      mcp_sessions_max: 10_000,
      mcp_sessions_per_capability_max: 64,
      mcp_sessions_per_tenant_max: 2_500,
      mcp_session_idle_ms: 900_000,
    });
  });

  it('ADR 0054 an idle time under a second or a quota of 0 is refused, naming the setting', () => {
    const load = () =>
      loadConfig({
        TALLY__ORCHESTRATOR__MCP_SESSION_IDLE_MS: '10',
        TALLY__ORCHESTRATOR__MCP_SESSIONS_PER_CAPABILITY_MAX: '0',
      });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/orchestrator\.mcp_session_idle_ms: .*TALLY__ORCHESTRATOR__MCP_SESSION_IDLE_MS/);
    expect(load).toThrow(/orchestrator\.mcp_sessions_per_capability_max: /);
  });
});
