// The typed configuration of both services. Every limit is here with its unit in its
// name; defaults exist only so the local embedded stack runs with no file at all.
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  IsUrl,
  Length,
  Matches,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import { COUNT_MAX } from '@tally/contracts';
import { HttpConfig } from './http-config.js';
import { WebhooksConfig } from './webhooks-config.js';

export class NatsTlsConfig {
  /** The CA that signed the servers' certificates. */
  @IsOptional() @IsString() ca_file?: string;
  /** A client certificate and its key, for servers that verify clients. */
  @IsOptional() @IsString() cert_file?: string;
  @IsOptional() @IsString() key_file?: string;
}

export class NatsConfig {
  /** One server or a comma-separated list; `nats://user:pass@host` works (the credentials become options). */
  @Matches(/^(nats|tls):\/\/[^\s]+$/, { message: 'url must look like nats://host:port' }) url = 'nats://127.0.0.1:4222';
  /** One way to log in: user and password, a token, an NKey seed file, or a creds (JWT) file. */
  @IsOptional() @IsString() user?: string;
  @IsOptional() @IsString() password?: string;
  @IsOptional() @IsString() token?: string;
  @IsOptional() @IsString() nkey_seed_file?: string;
  @IsOptional() @IsString() creds_file?: string;
  @IsOptional() @ValidateNested() @Type(() => NatsTlsConfig) tls?: NatsTlsConfig;
  @Matches(/^[A-Za-z0-9_-]{1,32}$/) namespace = 'tally';
  @IsInt() @Min(100) @Max(60_000) connect_timeout_ms = 5_000;
  @IsInt() @Min(10) @Max(60_000) reconnect_time_wait_ms = 250;
  @IsInt() @Min(100) @Max(60_000) publish_timeout_ms = 5_000;
  /** The operator asserts the servers run with sync_interval: always (nats-server ≥ 2.10.23). */
  @IsBoolean() assume_sync_always = false;
  /**
   * How the orchestrator sends Admit and Settle (ADR 0025): 'core' NATS request/reply, where a
   * re-sent command id is answered from the ledger, or 'jetstream', the durable command stream
   * of ADR 0003. The budget-authority always serves core requests, and the stream as well
   * while this is 'jetstream' (set it on both services to move from one to the other).
   */
  @IsIn(['core', 'jetstream']) budget_commands: 'core' | 'jetstream' = 'core';
  /**
   * Who creates the streams, consumers and KV buckets (ADR 0015). 'auto': the service does at
   * boot (the local stack, tests). 'check': an operator did, with `tally provision` (the
   * migrations Job); the service only reads what it needs and refuses to start, naming each
   * difference, when something is missing or set otherwise. Its NATS user then needs no
   * right to create or change any of it (deploy/nats).
   */
  @IsIn(['auto', 'check']) provision: 'auto' | 'check' = 'auto';
}

export class StreamLimitsConfig {
  @IsIn(['file', 'memory']) storage: 'file' | 'memory' = 'file';
  @IsInt() @Min(1) @Max(5) replicas = 1;
  @IsInt() @Min(1_000) @Max(86_400_000) duplicate_window_ms = 120_000;
  @IsInt() @Min(1_024) @Max(8_388_608) max_msg_size_bytes = 1_048_576;
  /**
   * Byte limit of each event stream (the ledger). Unset: none. When set, a full stream
   * refuses new events with a clear error; it never deletes old ones (ADR 0002).
   */
  @IsOptional() @IsInt() @Min(1_048_576) @Max(COUNT_MAX) max_bytes?: number;
  /** /readyz turns degraded when a stream with a byte limit is fuller than this share of it. */
  @IsNumber() @Min(0.01) @Max(1) fullness_degraded_ratio = 0.8;
  /** The work queue and the command stream: a full one refuses new messages. JetStream reserves this up front. */
  @IsInt() @Min(1_048_576) @Max(COUNT_MAX) queue_max_bytes = 1024 * 1024 * 1024;
  /** The dead-letter stream drops its oldest records past either bound. */
  @IsInt() @Min(1_048_576) @Max(COUNT_MAX) dead_letter_max_bytes = 1024 * 1024 * 1024;
  @IsInt() @Min(86_400_000) @Max(COUNT_MAX) dead_letter_max_age_ms = 30 * 86_400_000;
  /** How long an Idempotency-Key is remembered (KV bucket TTL); past it the key may name a new request. */
  @IsInt() @Min(60_000) @Max(30 * 86_400_000) idempotency_ttl_ms = 86_400_000;
  /** Byte limit of the idempotency bucket; when full, a new key is refused (503), never an old one forgotten early. */
  @IsInt() @Min(1_048_576) @Max(COUNT_MAX) idempotency_max_bytes = 64 * 1024 * 1024;
}

export class ConsumerLimitsConfig {
  @IsInt() @Min(1_000) @Max(600_000) ack_wait_ms = 30_000;
  @IsInt() @Min(1) @Max(100) deliveries_max = 10;
  @IsInt() @Min(1) @Max(100_000) ack_pending_max = 1_024;
  @IsInt() @Min(1) @Max(1_000) fetch_batch = 64;
  @IsInt() @Min(100) @Max(60_000) working_interval_ms = 5_000;
  @IsInt() @Min(1) @Max(300_000) nak_delay_max_ms = 30_000;
}

export class DatabaseConfig {
  /** PostgreSQL when set; otherwise SQLite at sqlite_path. */
  @IsOptional() @IsString() @Matches(/^postgres(ql)?:\/\//, { message: 'url must be a postgres:// URL' }) url?: string;
  @IsString() sqlite_path = '.tally/tally.sqlite';
}

export class AuthorityConfig {
  @IsInt() @Min(1) @Max(65_535) http_port = 7401;
  /** Prometheus /metrics and the full /readyz report, on a port of their own for the scraper only (ADR 0053). */
  @IsInt() @Min(1) @Max(65_535) metrics_port = 9464;
  @IsInt() @Min(1_000) @Max(86_400_000) hold_ttl_ms = 600_000;
  /**
   * How long past its TTL an admitted hold waits for its settlement; then the sweep realizes it
   * in full and records a settlement_missing ambiguity (B20, ADR 0047).
   */
  @IsInt() @Min(0) @Max(86_400_000) unsettled_grace_ms = 600_000;
  @IsInt() @Min(100) @Max(3_600_000) expiry_interval_ms = 5_000;
  @IsInt() @Min(100) @Max(3_600_000) reconcile_interval_ms = 10_000;
  @IsInt() @Min(1) @Max(10_000) sweep_batch_max = 256;
  @IsInt() @Min(1) @Max(1_000) append_attempts_max = 32;
  @IsInt() @Min(1) @Max(3_600) nonce_ttl_seconds = 30;
  @IsBoolean() require_execution_nonce = false;
  /** Ed25519 seed (base64url, 32 bytes); when absent the local stack generates and persists one. */
  @IsOptional() @IsString() signing_key?: string;
  @IsString() signing_key_path = '.tally/authority-signing-key';
  /**
   * The keyring (ADR 0014): `<key_id>.pem` files (0600) with the private keys rotation made.
   * Replicas share it (a volume or a mounted secret) to sign with a key rotated elsewhere.
   */
  @IsString() @Length(1, 4_096) keyring_dir = '.tally/keyring';
  @IsIn(['reversible_hold', 'prepaid_final']) payment_mode: 'reversible_hold' | 'prepaid_final' = 'reversible_hold';
  /**
   * Which payment rail adapter runs: the simulated rail (approves by default), or a rail
   * reached over HTTP at payment_rail_url, every money-moving call with an Idempotency-Key (ADR 0052).
   */
  @IsIn(['simulated', 'http']) payment_rail: 'simulated' | 'http' = 'simulated';
  /** The HTTP rail's base URL; required when payment_rail is http. */
  @IsOptional()
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  payment_rail_url?: string;
  /** How long one call to the HTTP rail may take before its outcome counts as unknown (ambiguous). */
  @IsInt() @Min(100) @Max(120_000) payment_rail_timeout_ms = 10_000;
  /** Test-only: enables POST /v1/test/faults (docs/adr/0006-fault-injection.md). */
  @IsBoolean() fault_injection = false;
  /** Spend policy: how often one hold may be increased (POST /v1/holds/{id}/increase). */
  @IsInt() @Min(0) @Max(64) hold_increases_max = 4;
  /** Spend policy: the retry_after_ms of a max_concurrent refusal (no window says when a hold closes). */
  @IsInt() @Min(1) @Max(600_000) concurrency_retry_after_ms = 1_000;
  /** Capture in the authorizing commit when the admission hook is passive and no nonce is involved (ADR 0041). */
  @IsBoolean() capture_with_authorize = true;
}

/**
 * The highest price a setting may name, in minor units (per million tokens, or per call):
 * 10^12 keeps every hold (tokens × price) far below 2^63-1 minor units (ADR 0044).
 */
export const PRICE_UNITS_MAX = 1_000_000_000_000;

/** A model's price, and what its prompts cost it beyond their text (ADR 0042). */
export class ModelPrice {
  @IsInt() @Min(0) @Max(PRICE_UNITS_MAX) input_per_mtok_units!: number;
  @IsInt() @Min(0) @Max(PRICE_UNITS_MAX) output_per_mtok_units!: number;
  @Matches(/^[A-Z]{3}$/) currency!: string;
  /**
   * The model's published encoding (OpenAI kinds only): the hold counts the prompt's texts
   * exactly instead of by their bytes, up to orchestrator.prompt_tokenize_bytes_max.
   */
  @IsOptional() @IsIn(['o200k_base', 'cl100k_base']) encoding?: 'o200k_base' | 'cl100k_base';
  /** False: a prompt with an image is refused (400) before any call. */
  @IsOptional() @IsBoolean() accepts_images?: boolean;
  /** The most tokens one image costs on this model, where that is not its provider's published formula. */
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000) image_tokens_max?: number;
}

export class ProviderConfig {
  @Matches(/^[A-Za-z0-9_.-]{1,64}$/) name!: string;
  @IsIn(['openai', 'anthropic']) kind!: 'openai' | 'anthropic';
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true }) base_url!: string;
  @Matches(/^[A-Z_][A-Z0-9_]{0,127}$/) api_key_env!: string;
  @IsObject() models!: Record<string, ModelPrice>;
}

export class ToolPriceConfig {
  @IsInt() @Min(0) @Max(PRICE_UNITS_MAX) cost_units_per_call!: number;
  @IsString() @Length(3, 16) currency!: string;
}

/** An MCP tool server the orchestrator calls on agents' behalf (http-api.md, Drop-in endpoints). */
export class ToolServerConfig {
  /** The admission's server_id; tools are offered as `<name>__<tool>`. */
  @Matches(/^[A-Za-z0-9_-]{1,64}$/) name!: string;
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true }) url!: string;
  /** Header name -> the environment variable that holds its value (credentials stay out of config). */
  @IsOptional() @IsObject() headers_env?: Record<string, string>;
  /** Only priced tools are offered (fail closed). */
  @IsObject() tools!: Record<string, ToolPriceConfig>;
  /** Per-call timeout: a call still running then is cut off and settled as a deadline failure (B5). */
  @IsInt() @Min(100) @Max(3_600_000) timeout_ms = 30_000;
}

export class OrchestratorConfig {
  @IsInt() @Min(1) @Max(65_535) http_port = 7402;
  /** Prometheus /metrics and the full /readyz report, on a port of their own for the scraper only (ADR 0053). */
  @IsInt() @Min(1) @Max(65_535) metrics_port = 9465;
  @IsInt() @Min(1) @Max(10_000) worker_concurrency = 256;
  @IsInt() @Min(0) @Max(20) max_retries = 2;
  @IsInt() @Min(0) @Max(20) run_retry_attempts = 0;
  @IsInt() @Min(1) @Max(1_000_000) max_tokens = 1_024;
  @IsInt() @Min(100) @Max(3_600_000) timeout_ms = 120_000;
  @IsInt() @Min(1) @Max(600_000) retry_base_backoff_ms = 250;
  @IsInt() @Min(1) @Max(600_000) retry_max_backoff_ms = 30_000;
  @IsInt() @Min(100) @Max(120_000) budget_timeout_ms = 5_000;
  @IsBoolean() run_workers = true;
  /**
   * The largest provider reply kept, in bytes (ADR 0019). A reply too large for its event is
   * kept by reference in the work-output stream; past this it is cut, with a marker naming its
   * full size and digest, and the unit still completes and is charged once.
   */
  @IsInt() @Min(64 * 1024) @Max(1024 * 1024 * 1024) output_bytes_max = 32 * 1024 * 1024;
  /**
   * The largest prompt, in UTF-8 bytes of its texts, that a model with an `encoding` tokenizes
   * for its hold (ADR 0042); a larger one is held at its byte bound, so tokenizing stays a
   * bounded cost of each attempt (a few µs per byte, on the worker's event loop). 0 never tokenizes.
   */
  @IsInt() @Min(0) @Max(1024 * 1024) prompt_tokenize_bytes_max = 32 * 1024;
  /**
   * 'metered' (the default) admits and settles every paid dispatch with the budget authority.
   * 'unmetered' skips the authority for benchmarks and local experiments; attempts are still
   * recorded, with hold ids marked unmetered, and the boot log warns (docs/adr/0005).
   */
  @IsIn(['metered', 'unmetered']) budget_mode: 'metered' | 'unmetered' = 'metered';
  /** How long a submit or abort waits for the projection to show it, so the next read sees it. */
  @IsInt() @Min(0) @Max(60_000) read_your_writes_timeout_ms = 5_000;
  /** How long a read that finds no unit waits for the projection to reach the unit's last event (ADR 0048). */
  @IsInt() @Min(0) @Max(60_000) read_wait_ms = 5_000;
  /** The stuck-queued sweeper: how often it runs, how long a unit may sit queued first, how many it re-queues per run. */
  @IsInt() @Min(100) @Max(3_600_000) queued_sweep_interval_ms = 15_000;
  @IsInt() @Min(1_000) @Max(86_400_000) queued_grace_ms = 60_000;
  @IsInt() @Min(1) @Max(10_000) queued_sweep_batch_max = 256;
  /**
   * The budget authority's base URL. Optional: admission proofs verify against the keys the
   * directory stream publishes; with this set, a key id the directory does not show yet is
   * looked up at GET /v1/keys (at most once per authority_keys_cooldown_ms).
   */
  @IsOptional()
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  authority_url?: string;
  @IsInt() @Min(0) @Max(3_600_000) authority_keys_cooldown_ms = 30_000;
  /**
   * MCP sessions open at once on this replica (ADR 0054), in all, per capability and per
   * tenant; past one of them `initialize` is answered 429 naming it. A session no request
   * touched for mcp_session_idle_ms ends, as does one whose token expires or is revoked.
   */
  @IsInt() @Min(1) @Max(100_000) mcp_sessions_max = 10_000;
  @IsInt() @Min(1) @Max(100_000) mcp_sessions_per_capability_max = 64;
  @IsInt() @Min(1) @Max(100_000) mcp_sessions_per_tenant_max = 2_500;
  @IsInt() @Min(1_000) @Max(86_400_000) mcp_session_idle_ms = 900_000;
}

export class ProjectionsConfig {
  /**
   * Run this replica's projections in a worker thread, so building the read models does not
   * share an event loop (a CPU core) with commands and HTTP. false runs them on the main thread.
   */
  @IsBoolean() worker_thread = true;
}

/** OpenTelemetry traces (issue 12): off unless an OTLP/HTTP endpoint is set. */
export class TracingConfig {
  /** The collector's OTLP/HTTP traces URL, e.g. http://otel-collector:4318/v1/traces. */
  @IsOptional()
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  otlp_endpoint?: string;
  /** Share of new traces kept (a request that arrives with a sampled traceparent is always kept). */
  @IsNumber() @Min(0) @Max(1) sample_ratio = 1;
  /** How long finished spans wait to be sent in one batch. */
  @IsInt() @Min(100) @Max(60_000) export_delay_ms = 5_000;
}

export class OidcIssuerConfig {
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true }) issuer!: string;
  @IsString() @Length(1, 256) audience!: string;
  /** Where the issuer publishes its keys (cached, refetched on an unknown kid); or jwks_file. */
  @IsOptional() @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true }) jwks_url?: string;
  @IsOptional() @IsString() @Length(1, 4096) jwks_file?: string;
  /** The claims that carry the tenant and the role. */
  @IsString() @Length(1, 128) tenant_claim = 'tenant';
  @IsString() @Length(1, 128) role_claim = 'role';
  /** Claim value -> Tally role, for identity providers that name roles their own way. */
  @IsOptional() @IsObject() role_map?: Record<string, 'admin' | 'issuer' | 'reader'>;
  @IsInt() @Min(0) @Max(300) clock_skew_seconds = 60;
  @IsInt() @Min(1_000) @Max(86_400_000) jwks_cache_ms = 600_000;
  /** Least time between two refetches of the JWKS, so unknown kids cannot hammer the issuer. */
  @IsInt() @Min(0) @Max(3_600_000) jwks_cooldown_ms = 30_000;
  @IsInt() @Min(100) @Max(60_000) jwks_timeout_ms = 5_000;
}

/** The largest allowed skew of a subject signature's `created`; the replay bucket keeps signatures this long twice over. */
export const SIGNATURE_SKEW_SECONDS_MAX = 300;

export class AuthConfig {
  /** TALLY_ADMIN_KEY: the bootstrap admin key of both services (http-api.md, Credentials). */
  @IsOptional() @IsString() @Length(32, 512, { message: 'admin_key must be 32 to 512 characters' }) admin_key?: string;
  /** How long a replica may go without confirming its view of keys is current before it refuses them. */
  @IsInt() @Min(1_000) @Max(600_000) directory_stale_after_ms = 10_000;
  @IsInt() @Min(100) @Max(60_000) directory_freshness_check_ms = 1_000;
  @IsInt() @Min(1) @Max(100_000) keys_per_tenant_max = 1_000;
  /** Proof of possession (ADR 0011): how far a signature's `created` may lie from this replica's clock. */
  @IsInt() @Min(1) @Max(SIGNATURE_SKEW_SECONDS_MAX) signature_skew_seconds = 30;
  /** Spent signatures one replica remembers at most; past it new signatures are refused (503) until old ones expire. */
  @IsInt() @Min(100) @Max(10_000_000) signature_replay_entries_max = 200_000;
  @IsArray() @ArrayMaxSize(16) @ValidateNested({ each: true }) @Type(() => OidcIssuerConfig) oidc: OidcIssuerConfig[] =
    [];
}

/** The web console the budget-authority serves at /console/ (issue 12, ADR 0034). */
export class ConsoleConfig {
  @IsBoolean() enabled = true;
  /**
   * The agent-orchestrator's base URL, from the authority: the console's work timeline reads
   * the orchestrator's API through the authority (same origin), with the caller's credential.
   */
  @IsOptional()
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  orchestrator_url?: string;
}

export class TallyConfig {
  @ValidateNested() @Type(() => AuthConfig) auth = new AuthConfig();
  @ValidateNested() @Type(() => NatsConfig) nats = new NatsConfig();
  @ValidateNested() @Type(() => StreamLimitsConfig) streams = new StreamLimitsConfig();
  @ValidateNested() @Type(() => ConsumerLimitsConfig) consumers = new ConsumerLimitsConfig();
  @ValidateNested() @Type(() => DatabaseConfig) database = new DatabaseConfig();
  @ValidateNested() @Type(() => ProjectionsConfig) projections = new ProjectionsConfig();
  @ValidateNested() @Type(() => TracingConfig) tracing = new TracingConfig();
  @ValidateNested() @Type(() => AuthorityConfig) authority = new AuthorityConfig();
  @ValidateNested() @Type(() => OrchestratorConfig) orchestrator = new OrchestratorConfig();
  @ValidateNested() @Type(() => ConsoleConfig) console = new ConsoleConfig();
  @ValidateNested() @Type(() => HttpConfig) http = new HttpConfig();
  @IsArray() @ArrayMaxSize(64) @ValidateNested({ each: true }) @Type(() => ProviderConfig) providers: ProviderConfig[] =
    [];
  @IsArray()
  @ArrayMaxSize(64)
  @ValidateNested({ each: true })
  @Type(() => ToolServerConfig)
  tool_servers: ToolServerConfig[] = [];
  @ValidateNested() @Type(() => WebhooksConfig) webhooks = new WebhooksConfig();
  @IsIn(['debug', 'info', 'warn', 'error']) log_level: 'debug' | 'info' | 'warn' | 'error' = 'info';
}
