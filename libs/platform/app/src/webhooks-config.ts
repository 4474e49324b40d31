// Tenant webhooks (http-api.md, Spend policy; ADR 0040): how deliveries are retried, bounded
// and timed out, and which URLs an endpoint may have. Defaults suit production; the local
// stack turns on http to loopback.
import { IsBoolean, IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';

export class WebhooksConfig {
  /** Whether this replica delivers (fans events out and posts them); every replica still registers endpoints. */
  @IsBoolean() deliver = true;
  /** Local development only: also accept http:// URLs whose host is a loopback address. */
  @IsBoolean() allow_http_loopback = false;
  /**
   * The key every endpoint's signing secret is derived from (base64url, at least 32 bytes), the
   * same on every replica. Unset: derived from the authority's signing key.
   */
  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9_-]{43,512}$/, { message: 'secret_key must be base64url of at least 32 bytes' })
  secret_key?: string;
  /** One call's bound, connection to last byte of the answer's head. */
  @IsInt() @Min(100) @Max(120_000) timeout_ms = 10_000;
  /** Calls per message before it is dead-lettered. */
  @IsInt() @Min(1) @Max(100) attempts_max = 12;
  /** The first retry waits about this long (with jitter); each next one twice as long, up to retry_max_ms. */
  @IsInt() @Min(10) @Max(5_000) retry_base_ms = 1_000;
  @IsInt() @Min(10) @Max(86_400_000) retry_max_ms = 3_600_000;
  /** Calls in flight at once per replica. */
  @IsInt() @Min(1) @Max(256) concurrency = 16;
  @IsInt() @Min(1) @Max(1_000) endpoints_per_tenant_max = 16;
}
