// The ProviderGateway the orchestrator uses: one entry per configured provider, each with its
// protocol, API key, price table and circuit breaker, sharing one keep-alive transport.
import { anthropicMessagesProtocol } from './anthropic-messages.protocol.js';
import { CircuitBreaker, type CircuitBreakerOptions } from './circuit-breaker.js';
import { runAttempt, type AttemptLimits } from './dispatch-attempt.js';
import { describeError } from './failure-classification.js';
import { HttpTransport, type ConnectionLimits } from './http-transport.js';
import { openAiChatProtocol } from './openai-chat.protocol.js';
import type { ModelPrice, ProviderKind, ProviderSettings } from './provider-config.types.js';
import type { DispatchDelta, DispatchOutcome, DispatchRequest, ProviderGateway } from './provider-gateway.types.js';
import type { ProviderProtocol } from './provider-protocol.js';

export interface GatewayOptions {
  attempt: AttemptLimits;
  connections: ConnectionLimits;
  breaker: Omit<CircuitBreakerOptions, 'nowMs'>;
  /** Where API keys are read from, by each provider's api_key_env. */
  env: Readonly<Record<string, string | undefined>>;
  /** Clock for the breakers; injectable for tests. */
  nowMs?: () => number;
}

/**
 * Production defaults. Sockets per origin exceed the 1,000 concurrent dispatches a process is
 * sized for; the free-socket timeout stays under the 5 s keep-alive many servers use.
 */
export const DEFAULT_GATEWAY_OPTIONS: Omit<GatewayOptions, 'env'> = {
  attempt: { idleTimeoutMs: 60_000, errorBodyMaxBytes: 8_192, sseEventMaxChars: 1_048_576, outputMaxChars: 4_194_304 },
  connections: {
    socketsPerOriginMax: 2_048,
    socketsTotalMax: 4_096,
    freeSocketsPerOriginMax: 1_024,
    freeSocketTimeoutMs: 4_000,
  },
  breaker: { failureThreshold: 5, coolDownMs: 30_000, halfOpenProbesMax: 1 },
};

const PROTOCOLS: Record<ProviderKind, ProviderProtocol> = {
  openai: openAiChatProtocol,
  anthropic: anthropicMessagesProtocol,
};

interface ProviderEntry {
  settings: ProviderSettings;
  protocol: ProviderProtocol;
  url: URL;
  apiKey: string;
  breaker: CircuitBreaker;
}

export class ProviderRegistry implements ProviderGateway {
  private readonly entries = new Map<string, ProviderEntry>();
  private readonly transport: HttpTransport;

  /** Throws, naming the setting to fix, when a provider is misconfigured or its API key is missing. */
  constructor(
    providers: readonly ProviderSettings[],
    private readonly options: GatewayOptions,
  ) {
    for (const settings of providers) {
      if (this.entries.has(settings.name)) throw new Error(`providers: duplicate provider name "${settings.name}"`);
      this.entries.set(settings.name, buildEntry(settings, options));
    }
    this.transport = new HttpTransport(options.connections);
  }

  providerNames(): string[] {
    return [...this.entries.keys()];
  }

  /**
   * The configured price, or undefined for an unknown provider or unpriced model (O7: refuse
   * those). Only the price: it is recorded on the attempt, and a model's other settings
   * (its encoding, its images) are not part of that record.
   */
  priceOf(provider: string, model: string): ModelPrice | undefined {
    const models = this.entries.get(provider)?.settings.models;
    const price = models && Object.hasOwn(models, model) ? models[model] : undefined;
    if (price === undefined) return undefined;
    const { input_per_mtok_units, output_per_mtok_units, currency } = price;
    return { input_per_mtok_units, output_per_mtok_units, currency };
  }

  /** The provider's breaker, for metrics and tests. */
  breakerOf(provider: string): CircuitBreaker | undefined {
    return this.entries.get(provider)?.breaker;
  }

  /**
   * One attempt. Calls that are never sent say so in `error` and are settled 'failed' because
   * nothing can have been billed: an unknown provider (request/failed) and an open breaker
   * (network/failed, with retry_after_ms = time until the breaker lets a probe through).
   */
  async dispatch(
    req: DispatchRequest,
    signal: AbortSignal,
    onProgress?: () => void,
    onDelta?: (delta: DispatchDelta) => void,
  ): Promise<DispatchOutcome> {
    const entry = this.entries.get(req.provider);
    if (!entry)
      return {
        kind: 'error',
        domain: 'request',
        settlement: 'failed',
        error: `unknown provider "${req.provider}"; no call made`,
        latency_ms: 0,
      };
    if (signal.aborted)
      return {
        kind: 'error',
        domain: 'unknown',
        settlement: 'cancelled',
        error: 'aborted by caller before the call; no call made',
        latency_ms: 0,
      };
    const permit = entry.breaker.acquire();
    if (!permit.allowed) {
      return {
        kind: 'error',
        domain: 'network',
        settlement: 'failed',
        error: `circuit breaker open for provider "${req.provider}"; no call made`,
        retry_after_ms: permit.retryInMs,
        latency_ms: 0,
      };
    }
    let outcome: DispatchOutcome;
    try {
      const target = {
        transport: this.transport,
        protocol: entry.protocol,
        url: entry.url,
        apiKey: entry.apiKey,
        limits: this.options.attempt,
      };
      outcome = await runAttempt(target, req, signal, onProgress, onDelta);
    } catch (err) {
      // runAttempt classifies every provider failure; reaching here is a bug, but the attempt
      // may have been sent, so it is settled unknown rather than thrown at the worker.
      outcome = {
        kind: 'error',
        domain: 'unknown',
        settlement: 'unknown',
        error: `internal: ${describeError(err)}`,
        latency_ms: 0,
      };
    }
    entry.breaker.record(outcome);
    return outcome;
  }

  /** Closes pooled sockets; in-flight attempts end as network or mid-stream failures. */
  close(): void {
    this.transport.close();
  }
}

function buildEntry(settings: ProviderSettings, options: GatewayOptions): ProviderEntry {
  const where = `providers["${settings.name}"]`;
  const protocol = PROTOCOLS[settings.kind];
  if (!protocol) throw new Error(`${where}.kind must be openai or anthropic, got "${String(settings.kind)}"`);
  let base: URL;
  try {
    base = new URL(settings.base_url);
  } catch {
    throw new Error(`${where}.base_url is not a URL: "${settings.base_url}"`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:')
    throw new Error(`${where}.base_url must be http or https`);
  const apiKey = options.env[settings.api_key_env];
  if (!apiKey) throw new Error(`${where}: environment variable ${settings.api_key_env} (api_key_env) is not set`);
  const url = new URL(`${base.href.replace(/\/+$/, '')}${protocol.path}`);
  const breakerOptions: CircuitBreakerOptions = options.nowMs
    ? { ...options.breaker, nowMs: options.nowMs }
    : options.breaker;
  return { settings, protocol, url, apiKey, breaker: new CircuitBreaker(breakerOptions) };
}
