// Shared set-up for the provider tests: a registry pointed at a ScriptedProvider.
import type { ScriptedProvider } from '@tally/testing';
import {
  DEFAULT_GATEWAY_OPTIONS,
  ProviderRegistry,
  type DispatchRequest,
  type GatewayOptions,
  type ProviderKind,
} from '../src/index.js';

export const KINDS: ProviderKind[] = ['openai', 'anthropic'];
export const API_KEY = 'test-key';

export function registryFor(
  server: ScriptedProvider | { url: string },
  kind: ProviderKind,
  overrides: Partial<Omit<GatewayOptions, 'env'>> = {},
): ProviderRegistry {
  return new ProviderRegistry(
    [
      {
        name: 'scripted',
        kind,
        base_url: server.url,
        api_key_env: 'SCRIPTED_API_KEY',
        models: { 'ok-model': { input_per_mtok_units: 1_000_000, output_per_mtok_units: 2_000_000, currency: 'USD' } },
      },
    ],
    { ...DEFAULT_GATEWAY_OPTIONS, ...overrides, env: { SCRIPTED_API_KEY: API_KEY } },
  );
}

export function request(model: string, overrides: Partial<DispatchRequest> = {}): DispatchRequest {
  return {
    provider: 'scripted',
    model,
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 64,
    timeout_ms: 5_000,
    ...overrides,
  };
}

/** A signal that is never aborted, for calls where the caller does not cancel. */
export function noAbort(): AbortSignal {
  return new AbortController().signal;
}
