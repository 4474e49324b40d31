// A revoked capability as the revocations bucket holds it (ADR 0049): one entry per capability,
// under its id, written by the authority once the ledger recorded the revocation and read by
// every replica of both services, so a revoked token is refused at the door. The bucket is a
// view derived from `CapabilityRevoked` events; the ledger stays the authority.

/** The longest a capability token lives (ttl_seconds at issue): a revocation older than this names only expired tokens. */
export const CAPABILITY_TTL_SECONDS_MAX = 31_536_000;

export interface RevocationRecord {
  readonly capability_id: string;
  readonly root_id: string;
  readonly revoked_at_ms: number;
  /** The capability whose revocation revoked this one (itself, or an ancestor). */
  readonly revoked_via: string;
}

/** A capability id as a bucket key: ids are built from [A-Za-z0-9_-] (`cap_…`, `<root>--<suffix>`). */
const KEY = /^[A-Za-z0-9_-]{1,256}$/;

export function isRevocationKey(capabilityId: string): boolean {
  return KEY.test(capabilityId);
}

export function encodeRevocation(record: RevocationRecord): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(record));
}

/** The record under `key`, or undefined when the bytes are not one (a reader skips it rather than trust it). */
export function decodeRevocation(key: string, bytes: Uint8Array): RevocationRecord | undefined {
  let value: Partial<RevocationRecord>;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes)) as Partial<RevocationRecord>;
  } catch {
    return undefined;
  }
  const ok =
    typeof value === 'object' &&
    value !== null &&
    value.capability_id === key &&
    typeof value.root_id === 'string' &&
    typeof value.revoked_via === 'string' &&
    Number.isSafeInteger(value.revoked_at_ms) &&
    value.revoked_at_ms! >= 0;
  return ok ? (value as RevocationRecord) : undefined;
}
