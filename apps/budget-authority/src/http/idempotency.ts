// Idempotency-Key on the authority's POST endpoints (ADR 0023). The key is scoped to the
// caller's tenant and the endpoint; the request's fingerprint covers its body, its path and
// who acts. The first use records a fresh command id; the same request again runs under it,
// and the ledger answers a known command id with what it recorded, so the answer is the same.
// Another request under the same key is a 409 naming the key.
import { createHash } from 'node:crypto';
import { canonicalJson } from '@tally/contracts';
import { ProblemException } from '@tally/platform-app';
import { idempotencyPartyOf, type Principal } from '@tally/platform-auth';
import type { IdempotencyRecords } from '@tally/platform-jetstream';
import { commandIdFrom } from './http-support.js';

export interface IdempotentCall {
  /** The route, as `POST /v1/admissions`. */
  readonly endpoint: string;
  readonly key: string | undefined;
  readonly caller: Principal;
  /** What makes this request this request: its body and path parameters. */
  readonly request: unknown;
  /** The scope of a caller with no credential, who acts by a proof: what the proof names, as `hold:<id>`. */
  readonly proofScope: string;
}

export class Idempotency {
  constructor(private readonly records: IdempotencyRecords) {}

  /** The command id the call runs under; undefined without a key (a new command each time). */
  async commandId(call: IdempotentCall): Promise<string | undefined> {
    if (call.key === undefined) return undefined;
    commandIdFrom(call.key); // validates the key's characters and length
    const party = idempotencyPartyOf(call.caller);
    const fingerprint = createHash('sha256')
      .update(canonicalJson({ actor: party.actor, request: JSON.parse(JSON.stringify(call.request ?? null)) }))
      .digest('base64url');
    const claim = await this.records
      .claim({ scope: party.scope ?? call.proofScope, endpoint: call.endpoint, key: call.key, fingerprint })
      .catch(() => {
        throw new ProblemException(
          503,
          'unavailable',
          'Idempotency records cannot be read now; retry with the same key',
        );
      });
    if (claim.kind === 'conflict') throw idempotencyConflict(call.key);
    return claim.commandId;
  }
}

export function idempotencyConflict(key: string): ProblemException {
  const message = `Idempotency-Key ${JSON.stringify(key)} was already used with a different request`;
  return new ProblemException(409, 'idempotency_conflict', message, [{ field: 'Idempotency-Key', message }], message);
}
