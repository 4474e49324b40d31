// Tenant webhooks (http-api.md, Spend policy; ADR 0040, 0053): how deliveries are retried,
// bounded and timed out, which URLs an endpoint may have, and which hosts and addresses a
// call may reach. Defaults suit production; the local stack turns on http to loopback.
import ipaddr from 'ipaddr.js';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  ValidateBy,
  type ValidationOptions,
} from 'class-validator';

/** A CIDR written plainly: four decimal parts for IPv4 (no `10.1/16` shorthand), or IPv6. */
export function isCidr(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  return ipaddr.IPv4.isValidCIDRFourPartDecimal(value) || ipaddr.IPv6.isValidCIDR(value);
}

function IsCidr(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isCidr',
      validator: {
        validate: isCidr,
        defaultMessage: () => 'each entry must be a CIDR such as 10.20.0.0/16 or fd00::/8',
      },
    },
    options,
  );
}

/** A lower-case host name, or `*.` and a name for every name below it. */
const HOST_PATTERN = /^(\*\.)?(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;
/** A name suffix without its leading dot, e.g. `cluster.local`. */
const SUFFIX_PATTERN = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;
const LIST_MAX = 256;

export class WebhooksConfig {
  /** Whether this replica delivers (fans events out and posts them); every replica still registers endpoints. */
  @IsBoolean() deliver = true;
  /**
   * Local development only: loopback targets (127.0.0.0/8, ::1 and names that resolve there)
   * are allowed, over http as well as https. Off, a loopback target is refused like any internal one.
   */
  @IsBoolean() allow_http_loopback = false;
  /**
   * Addresses an operator allows although they are private, link-local or cluster-internal
   * (an internal receiver, say). Every other such address is refused (ADR 0053).
   */
  @IsArray() @ArrayMaxSize(LIST_MAX) @IsCidr({ each: true }) allow_cidrs: string[] = [];
  /** Host names allowed whatever they resolve to (their DNS is trusted); `*.example.com` allows every name below it. */
  @IsArray()
  @ArrayMaxSize(LIST_MAX)
  @Matches(HOST_PATTERN, { each: true, message: 'each entry must be a lower-case host name, or *. and one' })
  allow_hosts: string[] = [];
  /** The cluster's own ranges (the pod and service CIDRs), refused like private ones even when they are public. */
  @IsArray() @ArrayMaxSize(LIST_MAX) @IsCidr({ each: true }) internal_cidrs: string[] = [];
  /** Names under these suffixes are cluster-internal and refused, unless allow_hosts names them. */
  @IsArray()
  @ArrayMaxSize(LIST_MAX)
  @Matches(SUFFIX_PATTERN, { each: true, message: 'each entry must be a lower-case name suffix such as svc' })
  internal_host_suffixes: string[] = ['svc', 'cluster.local', 'internal'];
  /**
   * The key every endpoint's signing secret is derived from (base64url, at least 32 bytes), the
   * same on every replica. Unset: derived from the authority's signing key.
   */
  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9_-]{43,512}$/, { message: 'secret_key must be base64url of at least 32 bytes' })
  secret_key?: string;
  /** One call's bound, resolving the host and connecting to the last byte of the answer's head. */
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
