// What the revoke handler does once the ledger recorded a revocation (ADR 0049): this
// replica's view refuses the capability and its descendants at once, and the revocations
// bucket is written before the answer, so every other replica of both services refuses them
// within one delivery of that write. A write that fails is logged, not answered as an error:
// the revocation is in force in the ledger, and the relay writes the bucket from it.
import type { Revoked } from '@tally/budget-application';
import type { RevocationRecord } from '@tally/contracts';
import type { RevocationView, RevocationWriter } from '@tally/directory-service';
import type { JsonLogger } from '@tally/platform-app';

/** The revoked capability first, then its descendants: the order the bucket is written in. */
export function revocationRecords(
  rootId: string,
  via: string,
  revokedIds: readonly string[],
  atMs: number,
): RevocationRecord[] {
  const ids = [via, ...revokedIds.filter((id) => id !== via)];
  return ids.map((id) => ({ capability_id: id, root_id: rootId, revoked_at_ms: atMs, revoked_via: via }));
}

export class RevocationNotices {
  constructor(
    private readonly writer: RevocationWriter,
    private readonly view: RevocationView,
    private readonly logger: JsonLogger,
  ) {}

  async published(rootId: string, revoked: Revoked): Promise<void> {
    const records = revocationRecords(rootId, revoked.id, revoked.revoked_descendants, Date.parse(revoked.revoked_at));
    this.view.note(records);
    try {
      await this.writer.write(records);
    } catch (error) {
      this.logger.event(
        'warn',
        'revocation not written to the revocations bucket; the relay writes it from the ledger',
        {
          capability_id: revoked.id,
          error: String(error),
        },
      );
    }
  }
}
