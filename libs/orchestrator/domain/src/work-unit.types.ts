// The vocabulary of a work unit: purposes, failure domains, settlements, legs and limits.
// These are the same words the HTTP API and the provider gateway use, in lower case.

export const PURPOSES = ['plan', 'execute', 'summarize', 'verify', 'voice_synthesis', 'tool_call'] as const;
export type Purpose = (typeof PURPOSES)[number];

export const FAILURE_DOMAINS = ['account', 'provider', 'model', 'request', 'network', 'deadline', 'unknown'] as const;
export type FailureDomain = (typeof FAILURE_DOMAINS)[number];

/** Absent is unknown, never zero: an attempt that may have been billed without a rated outcome is 'unknown'. */
export const SETTLEMENTS = ['ok', 'failed', 'cancelled', 'unknown'] as const;
export type Settlement = (typeof SETTLEMENTS)[number];

export const ATTEMPT_REASONS = ['initial', 'retry', 'route_fallback', 'endurance_retry'] as const;
export type AttemptReason = (typeof ATTEMPT_REASONS)[number];

export interface Usage {
  readonly input_tokens: number;
  readonly output_tokens: number;
}

export interface RouteLeg {
  /** The configured provider name, which is also the admission's server_id. */
  readonly provider: string;
  /** The model, which is also the admission's tool_name. */
  readonly model: string;
}

/** A JSON object the domain carries without interpreting it (content parts, call options). */
export type OpaqueJson = Readonly<Record<string, unknown>>;

export interface ChatMessage {
  readonly role: string;
  /** The message's text: what the session projection shows. */
  readonly content: string;
  /**
   * The structured content the text alone does not carry (images, tool calls, tool results),
   * as the dialect translation's neutral parts; absent for plain text.
   */
  readonly parts?: readonly OpaqueJson[];
}

/** Which API a unit came in by: the work API, a drop-in dialect, or an MCP tool call. */
export const ENTRYPOINTS = ['work', 'chat_completions', 'messages', 'mcp'] as const;
export type Entrypoint = (typeof ENTRYPOINTS)[number];

/** Limits as submitted: everything optional; `resolveLimits` fills the documented defaults. */
export interface WorkLimitsInput {
  readonly max_retries?: number;
  readonly run_retry_attempts?: number;
  readonly dispatch_ceiling?: number;
  readonly max_tokens?: number;
  readonly timeout_ms?: number;
  readonly retry_base_backoff_ms?: number;
  readonly run_retry_base_backoff_ms?: number;
  readonly max_backoff_ms?: number;
  readonly max_retry_after_ms?: number;
}

/** Every limit explicit, with its unit last. Stored resolved on WorkSubmitted so replay never depends on defaults changing. */
export interface WorkLimits {
  /** Retries on the same leg after its first attempt, per endurance round. */
  readonly max_retries: number;
  /** Extra rounds over the whole ladder once every leg is exhausted. */
  readonly run_retry_attempts: number;
  /** Hard cap on attempts of any reason; reaching it fails the work closed. */
  readonly dispatch_ceiling: number;
  readonly max_tokens: number;
  readonly timeout_ms: number;
  readonly retry_base_backoff_ms: number;
  readonly run_retry_base_backoff_ms: number;
  readonly max_backoff_ms: number;
  /** A retry-after longer than this is not waited out on the same leg; the ladder moves on instead. */
  readonly max_retry_after_ms: number;
}

export const DEFAULT_LIMITS = {
  max_retries: 2,
  run_retry_attempts: 1,
  max_tokens: 1024,
  timeout_ms: 120_000,
  retry_base_backoff_ms: 500,
  run_retry_base_backoff_ms: 2_000,
  max_backoff_ms: 30_000,
  max_retry_after_ms: 60_000,
} as const;

/** Upper bounds that keep one work unit from becoming an unbounded loop or stream. */
export const LIMIT_BOUNDS = {
  max_retries: 20,
  run_retry_attempts: 10,
  dispatch_ceiling: 200,
  max_tokens: 1_000_000,
  timeout_ms: 3_600_000,
  backoff_ms: 600_000,
  route_legs: 16,
  messages: 1_000,
} as const;

/** The ceiling the spec defaults to: every retry on one leg, in every endurance round. */
export function defaultDispatchCeiling(maxRetries: number, runRetryAttempts: number): number {
  return (maxRetries + 1) * (runRetryAttempts + 1);
}

export function resolveLimits(input: WorkLimitsInput | undefined): WorkLimits {
  const max_retries = input?.max_retries ?? DEFAULT_LIMITS.max_retries;
  const run_retry_attempts = input?.run_retry_attempts ?? DEFAULT_LIMITS.run_retry_attempts;
  return {
    max_retries,
    run_retry_attempts,
    dispatch_ceiling: input?.dispatch_ceiling ?? defaultDispatchCeiling(max_retries, run_retry_attempts),
    max_tokens: input?.max_tokens ?? DEFAULT_LIMITS.max_tokens,
    timeout_ms: input?.timeout_ms ?? DEFAULT_LIMITS.timeout_ms,
    retry_base_backoff_ms: input?.retry_base_backoff_ms ?? DEFAULT_LIMITS.retry_base_backoff_ms,
    run_retry_base_backoff_ms: input?.run_retry_base_backoff_ms ?? DEFAULT_LIMITS.run_retry_base_backoff_ms,
    max_backoff_ms: input?.max_backoff_ms ?? DEFAULT_LIMITS.max_backoff_ms,
    max_retry_after_ms: input?.max_retry_after_ms ?? DEFAULT_LIMITS.max_retry_after_ms,
  };
}

/** Names every limit that is out of range; an empty list means the limits are usable. */
export function limitProblems(limits: WorkLimits): string[] {
  const problems: string[] = [];
  const check = (field: keyof WorkLimits, min: number, max: number) => {
    const value = limits[field];
    if (!Number.isSafeInteger(value) || value < min || value > max)
      problems.push(`limits.${field} must be an integer in [${min}, ${max}], got ${value}`);
  };
  check('max_retries', 0, LIMIT_BOUNDS.max_retries);
  check('run_retry_attempts', 0, LIMIT_BOUNDS.run_retry_attempts);
  check('dispatch_ceiling', 1, LIMIT_BOUNDS.dispatch_ceiling);
  check('max_tokens', 1, LIMIT_BOUNDS.max_tokens);
  check('timeout_ms', 1, LIMIT_BOUNDS.timeout_ms);
  check('retry_base_backoff_ms', 0, LIMIT_BOUNDS.backoff_ms);
  check('run_retry_base_backoff_ms', 0, LIMIT_BOUNDS.backoff_ms);
  check('max_backoff_ms', 0, LIMIT_BOUNDS.backoff_ms);
  check('max_retry_after_ms', 0, LIMIT_BOUNDS.backoff_ms);
  return problems;
}
