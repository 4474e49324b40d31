// Deterministic ids. Event ids become the JetStream Nats-Msg-Id, so the same step
// retried (by this process after a crash, or by another replica) dedupes on the stream.
// The hold, authorize, capture and preflight formats are fixed by the spec (B1, B2, B13);
// the others follow the same "{hold}:{step}" pattern.

export const holdId = (requestId: string, capabilityId: string, grantIndex: number): string =>
  `budget-hold:${requestId}:${capabilityId}:${grantIndex}`;

export const preflightHoldId = (requestId: string, capabilityId: string, grantIndex: number): string =>
  `nonce-preflight-budget-hold:${requestId}:${capabilityId}:${grantIndex}`;

export const EventIds = {
  capabilityIssued: (capabilityId: string) => `capability:${capabilityId}:issued`,
  capabilityRevoked: (capabilityId: string) => `capability:${capabilityId}:revoked`,
  authorize: (hold: string) => `${hold}:authorize`,
  capture: (hold: string, authorizeCommitIndex: number) => `${hold}:capture-invocation:${authorizeCommitIndex}`,
  /** A capture in the authorizing commit, as stored: the index is completed on read (storedEventId). */
  captureInSameCommit: (hold: string) => `${hold}:capture-invocation`,
  /** A rollback of an uncaptured hold: begins `{hold}:authorize:` and contains `:rollback:` (B13). */
  rollback: (hold: string, authorizeCommitIndex: number, kind: string) =>
    `${hold}:authorize:${authorizeCommitIndex}:rollback:${kind}`,
  expire: (hold: string, authorizeCommitIndex: number) => `${hold}:authorize:${authorizeCommitIndex}:expire`,
  cancelCaptured: (hold: string, captureCommitIndex: number) =>
    `${hold}:cancel-captured-before-dispatch:${captureCommitIndex}`,
  releaseExposure: (hold: string) => `${hold}:release-exposure`,
  settle: (hold: string) => `${hold}:settle`,
  /** The sweep's settlement of a hold whose own never came (ADR 0047): its own id, so it never dedupes against a settle. */
  settleUnsettled: (hold: string) => `${hold}:unsettled-expired`,
  /** A swept hold is corrected once. */
  correctSpend: (hold: string) => `${hold}:correct-spend`,
  /** A hold settles once, so it overruns at most once. */
  overrun: (hold: string) => `${hold}:overrun`,
  retain: (hold: string) => `${hold}:retain`,
  admitted: (hold: string) => `${hold}:admitted`,
  leaseReserved: (hold: string, leaseId: string) => `${hold}:lease:${leaseId}:reserved`,
  leaseReleased: (hold: string, leaseId: string) => `${hold}:lease:${leaseId}:released`,
  /** Payment steps are numbered per hold, so a second release attempt is a new fact. */
  paymentStep: (hold: string, step: string, ordinal: number) => `${hold}:payment:${ordinal}:${step}`,
  nonceIssued: (nonceId: string) => `${nonceId}:issued`,
  nonceConsumed: (nonceId: string) => `${nonceId}:consumed`,
  ambiguityRecorded: (ambiguityId: string) => `${ambiguityId}:recorded`,
  ambiguityResolved: (ambiguityId: string) => `${ambiguityId}:resolved`,
  receipt: (receiptId: string) => `${receiptId}:recorded`,
} as const;

export const ambiguityId = (kind: string, holdIdValue: string, ordinal: number): string =>
  `ambiguity:${kind}:${holdIdValue}:${ordinal}`;

export const nonceId = (requestId: string, capabilityId: string, grantIndex: number): string =>
  `execution-nonce:${requestId}:${capabilityId}:${grantIndex}`;

/**
 * An event's id as its readers know it. A capture stored in the commit that authorized its
 * hold (ADR 0041) carries its id without the commit index, which was unknown before the
 * commit was stored; the id is completed here from the commit it is found in, so every
 * reader (the authority, the projections, a replay) sees `{hold}:capture-invocation:{index}`.
 */
export function storedEventId(type: string, eventId: string, data: unknown, commitIndex: number): string {
  if (type !== 'InvocationCaptured') return eventId;
  const d = data as { readonly same_commit?: unknown; readonly hold_id?: unknown };
  if (d.same_commit !== true || typeof d.hold_id !== 'string') return eventId;
  return EventIds.capture(d.hold_id, commitIndex);
}
