// The ports the orchestrator's use cases need. Adapters implement them in platform libs
// and apps; the shapes are structural, so the provider registry and the budget client
// satisfy them without this library importing either.
import type { ModelPrice, OutputRef, PromptProfile, Purpose } from '@tally/orchestrator-domain';

export type { ModelPrice } from '@tally/orchestrator-domain';

// ---- Provider gateway: one call is one paid dispatch attempt; retries are decided in the domain.

export type GatewayFailureDomain = 'account' | 'provider' | 'model' | 'request' | 'network' | 'deadline' | 'unknown';
export type GatewaySettlement = 'ok' | 'failed' | 'cancelled' | 'unknown';

export interface DispatchRequest {
  provider: string;
  model: string;
  messages: { role: string; content: string; parts?: readonly Readonly<Record<string, unknown>>[] }[];
  max_tokens: number;
  timeout_ms: number;
  /** The unit's call options (tools, sampling, passthrough), as recorded on WorkSubmitted. */
  options?: Readonly<Record<string, unknown>>;
}

/** One streamed piece of the reply, as the provider emitted it (the dialect library's neutral delta). */
export type DispatchDelta = Readonly<Record<string, unknown>> & { readonly kind: string };

export type DispatchOutcome =
  | {
      kind: 'ok';
      output: string;
      /** The reply's parts (text and tool calls) when it has more than text. */
      output_parts?: readonly Readonly<Record<string, unknown>>[];
      stop_reason?: string;
      usage?: { input_tokens: number; output_tokens: number };
      latency_ms: number;
    }
  | {
      kind: 'error';
      domain: GatewayFailureDomain;
      settlement: GatewaySettlement;
      error: string;
      retry_after_ms?: number;
      partial_output?: string;
      latency_ms: number;
      usage?: { input_tokens: number; output_tokens: number };
      /** Optional: the provider's HTTP status. When absent it is read from an "HTTP nnn" error prefix. */
      http_status?: number;
    };

export interface ProviderGateway {
  /** Resolves with a classified outcome for every provider failure; rejects only on programmer errors. */
  dispatch(
    req: DispatchRequest,
    signal: AbortSignal,
    onProgress?: () => void,
    onDelta?: (delta: DispatchDelta) => void,
  ): Promise<DispatchOutcome>;
}

// ---- Output kept by reference (ADR 0019): a reply too large for the event that records it.

export interface OutputStore {
  /** Writes the blob in chunks (a re-write of the same blob dedupes) and returns where it is. */
  put(workId: string, ordinal: number, blob: Uint8Array): Promise<OutputRef>;
  /** Reassembles a blob and checks it against the reference's size and digest. */
  get(ref: OutputRef): Promise<Uint8Array>;
}

// ---- Budget authority: Admit before every paid dispatch, Settle after it (budget-authority spec).

export interface AdmissionContext {
  readonly kind: 'work_unit';
  readonly work_id: string;
  readonly session_id: string;
  readonly purpose: Purpose;
  readonly ordinal: number;
}

export interface AdmitRequest {
  /** Stable across retries and redeliveries: repeating it returns the original answer. */
  readonly command_id: string;
  readonly request_id: string;
  readonly token: string;
  /** The provider's configured name, so grants can be written per provider. */
  readonly server_id: string;
  /** The model, so grants can be written per model. */
  readonly tool_name: string;
  /**
   * SHA-256 hex of the canonical JSON of the call's parameters (callParametersHash): the
   * authority binds the hold, the execution nonce and the admission proof to it (B13-B15).
   */
  readonly parameters_hash: string;
  /** The worst case: price × (the prompt's token bound + max_tokens), in minor units (ADR 0042). */
  readonly requested_cost_units: bigint;
  readonly context: AdmissionContext;
  /** Worst-case tokens (the prompt's bound + max_tokens), held against a grant's tokens_per_minute. */
  readonly requested_tokens?: number;
  /** The smallest hold this call can use: a hold that does not fit whole comes back smaller (hold_units). */
  readonly min_cost_units?: bigint;
}

export interface AdmitDecision {
  readonly verdict: 'allow' | 'deny';
  readonly reason?: string;
  readonly hold_id?: string;
  /** A rate-limit refusal (reason rate_limited): when a new admission can pass. */
  readonly retry_after_ms?: number;
  /** What the hold covers, when it was fitted below the requested cost. */
  readonly hold_units?: bigint;
  /** False for an allow that must not be dispatched (a nonce preflight); a metered port refuses it. */
  readonly dispatch?: boolean;
  /** The authority's signed proof of this admission: what a Settle of the hold presents. */
  readonly admission_proof?: AdmissionProofWire;
}

/** An admission proof as the authority sends it: claims (with hold_id), the key id and the signature. */
export interface AdmissionProofWire {
  readonly claims: Readonly<Record<string, unknown>>;
  readonly key_id: string;
  readonly signature: string;
}

export type FailedAfterDispatchKind = 'cancellation' | 'deadline' | 'incomplete' | 'generic';

export type SettleOutcome =
  | {
      readonly kind: 'completed';
      readonly cost_units: bigint;
      readonly currency: string;
      readonly tokens_used?: number;
    }
  | { readonly kind: 'failed_after_dispatch'; readonly failure: FailedAfterDispatchKind }
  | { readonly kind: 'not_dispatched'; readonly reason: string };

export interface SettleRequest {
  readonly command_id: string;
  readonly hold_id: string;
  readonly outcome: SettleOutcome;
  /**
   * What proves the right to settle this hold (http-api.md, Credentials): the admission's
   * proof when this process still has it, and the capability token the unit came with.
   * The authority answers a settle carrying neither as if the hold did not exist.
   */
  readonly admission_proof?: AdmissionProofWire;
  readonly token?: string;
}

export interface SettleResult {
  /** The authority's receipt, opaque to the orchestrator. */
  readonly receipt?: unknown;
}

export interface BudgetPort {
  /**
   * Whether admit needs the capability token. When the worker has none for a unit (see
   * `credentialFor`), a port that needs it refuses the attempt instead of asking; an
   * unmetered port does not. Absent means required: fail closed.
   */
  readonly credentialRequired?: boolean;
  /**
   * Whether `settle` asks nobody and cannot fail (unmetered). The worker then records an
   * attempt's outcome, its hold's settlement and the unit's conclusion in one commit instead
   * of settling in between. Absent means the settlement is a call to make first.
   */
  readonly settlesLocally?: boolean;
  admit(request: AdmitRequest): Promise<AdmitDecision>;
  settle(request: SettleRequest): Promise<SettleResult>;
}

// ---- Configuration and ambient services, injected so tests and replays control them.

export interface PriceTable {
  /** The configured price, or undefined: an unpriced model is refused, never dispatched. */
  priceOf(provider: string, model: string): ModelPrice | undefined;
}

export interface PromptProfiles {
  /**
   * What the model makes of a prompt (its chat format, images, its encoding when one is
   * configured), or undefined for a model the configuration says nothing of (a tool server):
   * its prompt is then bounded by its bytes alone (ADR 0042).
   */
  profileOf(provider: string, model: string): PromptProfile | undefined;
}

export interface Clock {
  nowMs(): number;
}

/** A uniform value in [0, 1) for backoff jitter. */
export type JitterSource = () => number;

/** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** A fresh unique id, used for command ids (and so event ids). */
export type IdSource = () => string;
