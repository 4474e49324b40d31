// The mapping tables between the dialects: stop reasons and error kinds. Data, not code,
// so the table-driven tests read them row by row.
import type { ErrorKind, StopReason } from './neutral.types.js';

export const OPENAI_FINISH_OF: Record<StopReason, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  content_filter: 'content_filter',
};

/** OpenAI does not tell a stop sequence from a natural end: both are `stop`. */
export const STOP_OF_OPENAI_FINISH: Record<string, StopReason> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'content_filter',
};

export const ANTHROPIC_STOP_OF: Record<StopReason, string> = {
  end_turn: 'end_turn',
  stop_sequence: 'stop_sequence',
  max_tokens: 'max_tokens',
  tool_use: 'tool_use',
  content_filter: 'refusal',
};

export const STOP_OF_ANTHROPIC: Record<string, StopReason> = {
  end_turn: 'end_turn',
  stop_sequence: 'stop_sequence',
  max_tokens: 'max_tokens',
  tool_use: 'tool_use',
  refusal: 'content_filter',
  pause_turn: 'end_turn',
};

/**
 * Status and error type per kind, in each dialect. 402 and 400 are never retried by the
 * SDKs (they retry 408, 409, 429 and 5xx), so a budget refusal is final for them; 5xx is
 * only for Tally's own faults and for providers that failed every attempt.
 */
export const ERROR_TABLE: Record<ErrorKind, { status: number; openai: string; anthropic: string }> = {
  invalid_request: { status: 400, openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  auth: { status: 401, openai: 'invalid_request_error', anthropic: 'authentication_error' },
  budget: { status: 402, openai: 'budget_exceeded', anthropic: 'budget_exceeded' },
  permission: { status: 403, openai: 'permission_error', anthropic: 'permission_error' },
  not_found: { status: 404, openai: 'invalid_request_error', anthropic: 'not_found_error' },
  conflict: { status: 409, openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  rate_limited: { status: 429, openai: 'rate_limit_exceeded', anthropic: 'rate_limit_error' },
  internal: { status: 500, openai: 'server_error', anthropic: 'api_error' },
  upstream: { status: 502, openai: 'server_error', anthropic: 'api_error' },
  overloaded: { status: 503, openai: 'server_error', anthropic: 'overloaded_error' },
};
