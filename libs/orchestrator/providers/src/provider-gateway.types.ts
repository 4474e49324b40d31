// The contract between the orchestrator's application layer and the provider adapters.
// One dispatch() is one paid attempt; it never throws for provider failures, it classifies
// them (agent-orchestrator spec, "How each error is classified"), so the caller can record
// the attempt and decide whether to retry.

import type { Delta } from '@tally/orchestrator-dialects';

export type FailureDomain = 'account' | 'provider' | 'model' | 'request' | 'network' | 'deadline' | 'unknown';

/** Absent is unknown, never zero: a call that may have been billed without a rated outcome is 'unknown'. */
export type Settlement = 'ok' | 'failed' | 'cancelled' | 'unknown';

export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

export interface DispatchRequest {
  /** The configured provider name (config `providers[].name`). */
  provider: string;
  model: string;
  messages: { role: string; content: string; parts?: readonly Readonly<Record<string, unknown>>[] }[];
  max_tokens: number;
  /** Overall watchdog for the attempt, from request start to the last byte. */
  timeout_ms: number;
  /** Tools, tool choice, sampling and passthrough fields: the dialect library's neutral call options. */
  options?: Readonly<Record<string, unknown>>;
}

/** One streamed piece of the reply (the dialect library's neutral Delta). */
export type DispatchDelta = Delta;

export type DispatchOutcome =
  | {
      kind: 'ok';
      output: string;
      /** The reply's parts when it has more than text (tool calls). */
      output_parts?: readonly Readonly<Record<string, unknown>>[];
      stop_reason?: string;
      usage?: Usage;
      latency_ms: number;
    }
  | {
      kind: 'error';
      domain: FailureDomain;
      settlement: Settlement;
      error: string;
      retry_after_ms?: number;
      partial_output?: string;
      latency_ms: number;
      usage?: Usage;
      /** Set when the provider answered with a non-2xx status. */
      http_status?: number;
    };

export interface ProviderGateway {
  /**
   * Makes one attempt. Resolves with a classified outcome for every provider, network,
   * parse, abort and deadline failure; it rejects only on programmer errors (for example
   * an unknown provider name). `onProgress` is called on every received chunk so a worker
   * can send JetStream in-progress acks during long streams.
   */
  dispatch(
    req: DispatchRequest,
    signal: AbortSignal,
    onProgress?: () => void,
    onDelta?: (delta: DispatchDelta) => void,
  ): Promise<DispatchOutcome>;
}
