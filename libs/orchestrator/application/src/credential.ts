// The capability token is a bearer credential: whoever holds it can spend the budget it
// grants. The ledger records only its fingerprint (ADR 0007); the token itself travels on
// the work-queue message, which the stream deletes once the unit's delivery is acked.
import { tokenFingerprint } from '@tally/contracts';

/** sha256 of the token, base64url without padding (43 characters); one definition for the ledger and the dead letters. */
export { tokenFingerprint };

/**
 * The token a worker may present for `fingerprint`: the one that came with the delivery, if
 * it is the one the unit was submitted with. Undefined when it is missing (a message the
 * sweeper re-published, or one queued before ADR 0007) or does not match.
 */
export function credentialFor(fingerprint: string, delivered: string | undefined): string | undefined {
  return delivered !== undefined && delivered.length > 0 && tokenFingerprint(delivered) === fingerprint
    ? delivered
    : undefined;
}
