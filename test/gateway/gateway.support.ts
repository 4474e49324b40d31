// Shared by the drop-in suites: a metered orchestrator with the real budget-authority, and
// capabilities issued by it for the scripted providers' models.
import { generateKeyPairSync } from 'node:crypto';
import { OrchestratorHarness } from '../orchestrator/orchestrator.harness.js';

type Json = Record<string, unknown>;

export function meteredHarness(
  prefix: string,
  env: Record<string, string> = {},
  config?: () => Record<string, unknown>,
): OrchestratorHarness {
  return new OrchestratorHarness({
    prefix,
    env: { TALLY__ORCHESTRATOR__BUDGET_MODE: 'metered', ...env },
    ...(config ? { config } : {}),
  });
}

export function authorityCall(h: OrchestratorHarness, method: string, path: string, body?: unknown): Promise<Json> {
  return h.authorityCall(method, path, body);
}

/** A root capability from the authority; each grant defaults to generous limits in USD. */
export async function issueCapability(h: OrchestratorHarness, grants: Json[]): Promise<{ id: string; token: string }> {
  const subject = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
  const cap = await authorityCall(h, 'POST', '/v1/capabilities', {
    subject_public_key: subject,
    ttl_seconds: 3600,
    grants: grants.map((g) => ({ max_invocations: 1_000, max_cost_per_invocation: 100_000, currency: 'USD', ...g })),
  });
  return { id: cap['id'] as string, token: cap['token'] as string };
}

/** Grants for every scripted model of both scripted providers. */
export function scriptedGrants(models: readonly string[]): Json[] {
  return ['scripted', 'scripted-anthropic'].flatMap((server_id) =>
    models.map((tool_name) => ({ server_id, tool_name })),
  );
}
