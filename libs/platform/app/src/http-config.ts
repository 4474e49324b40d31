// The HTTP front door of both services: how many refused requests (4xx) one source or one
// credential may cost per minute, and how many of each the limit remembers (ADR 0050).
import { IsInt, Max, Min } from 'class-validator';

export class HttpConfig {
  /**
   * Refused requests (every 4xx but 402 and 429) one client address, or one presented
   * credential, may have per minute, in a burst or spread out; past it every request from
   * that address or with that credential is answered 429 with retry-after, unread.
   */
  @IsInt() @Min(1) @Max(1_000_000) refusals_per_minute_max = 600;
  /** Client addresses the limit remembers at once (least recently refused forgotten first); about 200 bytes each. */
  @IsInt() @Min(16) @Max(1_000_000) refusal_sources_max = 10_000;
  /** Credential fingerprints the limit remembers at once, likewise. */
  @IsInt() @Min(16) @Max(1_000_000) refusal_credentials_max = 10_000;
}
