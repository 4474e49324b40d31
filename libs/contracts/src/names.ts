// Stream, subject, consumer and bucket names, in one place that both services import.
// Every name derives from a namespace so that tests (and multi-tenant installs) can
// run side by side on one NATS server without touching each other's streams.

export interface TallyNames {
  readonly namespace: string;
  readonly budgetEventsStream: string;
  readonly workEventsStream: string;
  readonly workQueueStream: string;
  readonly commandsStream: string;
  readonly deadLetterStream: string;
  /**
   * KV: the final reply to each command, one bucket per service that answers commands, written
   * only by it (ADR 0051): `<NS>_BUDGET_COMMAND_REPLIES` by the authority, `<NS>_WORK_COMMAND_REPLIES`
   * by the orchestrator. A caller only reads the bucket of the service it sent to.
   */
  commandRepliesBucket(service: CommandService): string;
  /** KV: the Idempotency-Key records of HTTP calls (scope, endpoint, request fingerprint, command id). */
  readonly idempotencyBucket: string;
  /** Tenants, operator keys and signing keys: written by the authority, read by both services. */
  readonly directoryEventsStream: string;
  /** Tenant webhook endpoints and every delivery attempt (ADR 0040): ledger, kept with the others. */
  readonly webhookEventsStream: string;
  readonly directoryEventsWildcard: string;
  directoryTenantSubject(tenantId: string): string;
  readonly directorySigningKeysSubject: string;
  budgetEventSubject(rootCapabilityId: string): string;
  workEventSubject(workId: string): string;
  readonly budgetEventsWildcard: string;
  readonly workEventsWildcard: string;
  readonly workQueueSubject: string;
  /**
   * Provider output too large for the event that records it (ADR 0019), in chunks written
   * before that event: chunk i of attempt n of a unit is `<ns>.work.out.<workId>.<n>.<i>`.
   */
  readonly workOutputStream: string;
  workOutputSubject(workId: string, ordinal: number): string;
  readonly workOutputWildcard: string;
  /**
   * Core NATS, no stream: the live reply of one unit the drop-in endpoints wait on (its deltas
   * as the provider emits them, then its end). Published by whichever replica's worker runs
   * the unit, subscribed by the replica holding the caller's HTTP connection (ADR 0036).
   */
  workLiveSubject(workId: string): string;
  readonly workLiveWildcard: string;
  commandSubject(service: CommandService, command: string): string;
  commandWildcard(service: CommandService): string;
  /** Core NATS request/reply commands (ADR 0025): `<ns>.req.<service>.<command>`, answered by one replica. */
  requestSubject(service: CommandService, command: string): string;
  requestWildcard(service: CommandService): string;
  /** The queue group every replica of a service joins on its request subjects. */
  requestQueueGroup(service: CommandService): string;
  deadLetterSubject(source: string): string;
  readonly deadLetterWildcard: string;
  /**
   * KV: subject signatures already spent at one service, kept for their window (ADR 0011). Each
   * service has its own (ADR 0051): the signed `@path` is a route of that service only.
   */
  signatureReplayBucket(service: CommandService): string;
  /** KV: revoked capabilities by id, written by the authority, followed by every replica (ADR 0049). */
  readonly revocationsBucket: string;
}

export type CommandService = 'budget' | 'work';

const TOKEN = /^[A-Za-z0-9_-]{1,64}$/;

/** Subject tokens must not contain NATS wildcards or separators; ids are checked here. */
/** Whether `value` can be one token of a subject: an id that cannot was never written under one. */
export function isSubjectToken(value: string): boolean {
  return TOKEN.test(value);
}

export function assertSubjectToken(value: string, what: string): string {
  if (!TOKEN.test(value)) {
    throw new Error(`${what} must match ${TOKEN.source} to be used as a subject token, got ${JSON.stringify(value)}`);
  }
  return value;
}

export function tallyNames(namespace = 'tally'): TallyNames {
  assertSubjectToken(namespace, 'namespace');
  const upper = namespace.toUpperCase().replace(/-/g, '_');
  return {
    namespace,
    budgetEventsStream: `${upper}_BUDGET_EVENTS`,
    workEventsStream: `${upper}_WORK_EVENTS`,
    workQueueStream: `${upper}_WORK_QUEUE`,
    commandsStream: `${upper}_COMMANDS`,
    deadLetterStream: `${upper}_DLQ`,
    commandRepliesBucket: (service) => `${upper}_${service.toUpperCase()}_COMMAND_REPLIES`,
    idempotencyBucket: `${upper}_IDEMPOTENCY`,
    directoryEventsStream: `${upper}_DIRECTORY_EVENTS`,
    webhookEventsStream: `${upper}_WEBHOOK_EVENTS`,
    directoryEventsWildcard: `${namespace}.directory.evt.>`,
    directoryTenantSubject: (id) => `${namespace}.directory.evt.tenant.${assertSubjectToken(id, 'tenantId')}`,
    directorySigningKeysSubject: `${namespace}.directory.evt.signing-keys`,
    budgetEventSubject: (id) => `${namespace}.budget.evt.${assertSubjectToken(id, 'rootCapabilityId')}`,
    workEventSubject: (id) => `${namespace}.work.evt.${assertSubjectToken(id, 'workId')}`,
    budgetEventsWildcard: `${namespace}.budget.evt.>`,
    workEventsWildcard: `${namespace}.work.evt.>`,
    workQueueSubject: `${namespace}.work.queue`,
    workOutputStream: `${upper}_WORK_OUTPUT`,
    workOutputSubject: (id, ordinal) => `${namespace}.work.out.${assertSubjectToken(id, 'workId')}.${ordinal}`,
    workOutputWildcard: `${namespace}.work.out.>`,
    workLiveSubject: (id) => `${namespace}.work.live.${assertSubjectToken(id, 'workId')}`,
    workLiveWildcard: `${namespace}.work.live.>`,
    commandSubject: (service, command) => `${namespace}.cmd.${service}.${assertSubjectToken(command, 'command')}`,
    commandWildcard: (service) => `${namespace}.cmd.${service}.>`,
    requestSubject: (service, command) => `${namespace}.req.${service}.${assertSubjectToken(command, 'command')}`,
    requestWildcard: (service) => `${namespace}.req.${service}.*`,
    requestQueueGroup: (service) => `${service}-requests`,
    signatureReplayBucket: (service) => `${upper}_${service.toUpperCase()}_SIGNATURE_REPLAY`,
    revocationsBucket: `${upper}_REVOCATIONS`,
    deadLetterSubject: (source) => `${namespace}.dlq.${assertSubjectToken(source, 'dead-letter source')}`,
    deadLetterWildcard: `${namespace}.dlq.>`,
  };
}

/** Header names Tally sets on NATS messages. */
export const Headers = {
  msgId: 'Nats-Msg-Id',
  expectedLastSubjectSequence: 'Nats-Expected-Last-Subject-Sequence',
  commandId: 'Tally-Command-Id',
  replyTo: 'Tally-Reply-To',
  /** The type of a commit's first event. */
  eventType: 'Tally-Event-Type',
  /** Every event type of a multi-event commit, in order, comma-separated (absent on a single-event commit). */
  eventTypes: 'Tally-Event-Types',
  /** How many events a commit message carries (absent on a plain single-event envelope). */
  commitEvents: 'Tally-Commit-Events',
  /**
   * The subject's sequence before this commit: the append's expected last subject sequence,
   * which the server enforced, so it links each commit to the one before it on its subject.
   */
  previousSubjectSequence: 'Tally-Previous-Subject-Sequence',
  traceparent: 'traceparent',
} as const;
