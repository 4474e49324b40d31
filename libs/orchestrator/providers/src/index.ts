export type {
  DispatchDelta,
  DispatchOutcome,
  DispatchRequest,
  FailureDomain,
  ProviderGateway,
  Settlement,
  Usage,
} from './provider-gateway.types.js';
export type { ModelPrice, ProviderKind, ProviderSettings } from './provider-config.types.js';
export { backoffCeilingMs, backoffDelayMs } from './backoff.js';
export type { BackoffInput, JitterMode } from './backoff.js';
export { CircuitBreaker } from './circuit-breaker.js';
export type { BreakerPermit, BreakerState, CircuitBreakerOptions } from './circuit-breaker.js';
export { classifyHttpStatus, parseRetryAfterMs } from './failure-classification.js';
export type { ClassifiedFailure } from './failure-classification.js';
export { SseOverflowError, SseParser } from './sse-parser.js';
export type { SseEvent, SseParserOptions } from './sse-parser.js';
export { ANTHROPIC_VERSION } from './anthropic-messages.protocol.js';
export type { AttemptLimits } from './dispatch-attempt.js';
export type { ConnectionLimits } from './http-transport.js';
export { DEFAULT_GATEWAY_OPTIONS, ProviderRegistry } from './provider-registry.js';
export type { GatewayOptions } from './provider-registry.js';
export { loadTokenCounters, TOKEN_ENCODINGS, TOKENIZE_RUN_CHARS_MAX } from './prompt-tokenizer.js';
export type { TokenCount, TokenEncoding } from './prompt-tokenizer.js';
