// The one source of truth for what each Tally NATS user may do (ADR 0015): publish and
// subscribe allow lists naming exactly the JetStream API subjects each service needs (per
// stream and consumer), its own core subjects, and its own inbox. Replies to requests go out
// through allow_responses, never a blanket `_INBOX.>`. deploy/nats/ and the NATS ConfigMap
// in deploy/kustomize/base/ are generated from here (`npm run nats:config`, rendered by
// nats-config-files.ts); a test checks that the checked-in files match, and another runs
// them on a real nats-server.
import { tallyNames, type TallyNames } from '@tally/contracts';
import { kvStreamName } from '@tally/platform-jetstream';
import { durableNameFor } from '@tally/platform-nest';
import { serviceInboxPrefix } from './nats-runtime.js';
import { leaseBucketName, MIGRATIONS_LEASE_KEY, projectorLeaseKey } from './service-database.js';
import { REVOCATION_RELAY_CONSUMER } from './revocations-topology.js';
import { DISPATCH_CONSUMER, type TallyService } from './topology.js';
import { webhookNames } from './webhook-topology.js';

/** The operator commands' user (provision, migrate, backup, restore, replay) and its inbox prefix. */
export const OPERATOR_NATS_USER = 'tally-operator';
export const OPERATOR_INBOX_PREFIX = `_INBOX.${OPERATOR_NATS_USER}`;

export type TallyNatsUser = TallyService | typeof OPERATOR_NATS_USER;

export interface NatsUserPermissions {
  readonly user: TallyNatsUser;
  /** The environment variable of the nats-server process that holds this user's password. */
  readonly passwordEnv: string;
  readonly publish: { readonly allow: readonly string[]; readonly deny: readonly string[] };
  readonly subscribe: { readonly allow: readonly string[] };
  /** May answer a request it received, on that request's reply subject only. */
  readonly allowResponses: boolean;
}

const API = '$JS.API';

/** Reading a stream's messages by sequence or by subject: stream get and direct get. */
function readStream(stream: string): string[] {
  return [`${API}.STREAM.MSG.GET.${stream}`, `${API}.DIRECT.GET.${stream}`, `${API}.DIRECT.GET.${stream}.>`];
}

/**
 * Ordered consumers (projections, aggregate loads, the directory view): each gets a new
 * generated name, so the consumer token is a wildcard; but only on this one stream, and only
 * with a filter inside the stream's subjects (the create subject carries the filter), so no
 * unfiltered or durable consumer can be made this way.
 */
function orderedConsumers(stream: string, subjects: string): string[] {
  return [
    `${API}.CONSUMER.CREATE.${stream}.*.${subjects}`,
    `${API}.CONSUMER.MSG.NEXT.${stream}.*`,
    `${API}.CONSUMER.INFO.${stream}.*`,
    `${API}.CONSUMER.DELETE.${stream}.*`,
  ];
}

/** Pulling from and acking one durable consumer that `tally provision` created. */
function durable(stream: string, consumer: string): string[] {
  return [
    `${API}.CONSUMER.INFO.${stream}.${consumer}`,
    `${API}.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
    `$JS.ACK.${stream}.${consumer}.>`,
  ];
}

/**
 * A KV bucket, read and written by key (`>`: every key). Writing a key is publishing on its
 * subject; the buckets refuse roll-up headers (ADR 0051), so that right never reaches a
 * key of another.
 */
function kv(bucket: string, key = '>'): string[] {
  return [`$KV.${bucket}.${key}`, ...kvRead(bucket, key)];
}

/** Reading a KV bucket by key (direct get), never writing it. */
function kvRead(bucket: string, key = '>'): string[] {
  return [`${API}.DIRECT.GET.${kvStreamName(bucket)}.$KV.${bucket}.${key}`];
}

/** Every bucket of the namespace: the durability report and a bucket's binding read their stream info. */
function allBuckets(n: TallyNames): string[] {
  return [
    n.commandRepliesBucket('budget'),
    n.commandRepliesBucket('work'),
    leaseBucketName(n.namespace),
    n.idempotencyBucket,
    n.signatureReplayBucket('budget'),
    n.signatureReplayBucket('work'),
    n.revocationsBucket,
  ];
}

/** The durability report on /readyz reads every Tally stream's info (metadata only). */
function streamInfos(n: TallyNames): string[] {
  const w = webhookNames(n);
  const streams = [
    n.budgetEventsStream,
    n.workEventsStream,
    n.workOutputStream,
    n.directoryEventsStream,
    n.workQueueStream,
    n.commandsStream,
    n.deadLetterStream,
    w.eventsStream,
    w.outboxStream,
    ...allBuckets(n).map(kvStreamName),
  ];
  return [`${API}.INFO`, ...streams.map((s) => `${API}.STREAM.INFO.${s}`)];
}

/** Following a bucket's entries as they change, with an ordered consumer on its stream (read only). */
function followKv(bucket: string): string[] {
  return orderedConsumers(kvStreamName(bucket), `$KV.${bucket}.>`);
}

/** A service's projection lease and the migration lock, and no other service's lease. */
function leases(n: TallyNames, service: TallyService): string[] {
  const bucket = leaseBucketName(n.namespace);
  return [...kv(bucket, projectorLeaseKey(service)), ...kv(bucket, MIGRATIONS_LEASE_KEY)];
}

function authority(n: TallyNames): NatsUserPermissions {
  const service: TallyService = 'budget-authority';
  const w = webhookNames(n);
  return {
    user: service,
    passwordEnv: 'BUDGET_AUTHORITY_NATS_PASSWORD',
    publish: {
      allow: [
        n.budgetEventsWildcard,
        n.directoryEventsWildcard,
        n.deadLetterWildcard,
        ...streamInfos(n),
        ...readStream(n.budgetEventsStream),
        ...orderedConsumers(n.budgetEventsStream, n.budgetEventsWildcard),
        ...readStream(n.directoryEventsStream),
        ...orderedConsumers(n.directoryEventsStream, n.directoryEventsWildcard),
        // Budget commands over JetStream (nats.budget_commands: jetstream, ADR 0003): the
        // durable consumer, its own reply cache, and the answer to the orchestrator's command inbox.
        ...durable(n.commandsStream, durableNameFor('budget')),
        ...kv(n.commandRepliesBucket('budget')),
        `${serviceInboxPrefix('agent-orchestrator')}.>`,
        ...leases(n, service),
        // Idempotency-Key records of HTTP calls (ADR 0023): created and read by key.
        ...kv(n.idempotencyBucket),
        // The signatures spent at the authority's routes (ADR 0011), in its own bucket (ADR 0051).
        ...kv(n.signatureReplayBucket('budget')),
        // Revocations (ADR 0049): written by key (only by this user), followed by this replica's
        // view, and relayed from the ledger by one durable consumer of the budget events.
        ...kv(n.revocationsBucket),
        ...followKv(n.revocationsBucket),
        ...durable(n.budgetEventsStream, REVOCATION_RELAY_CONSUMER),
        // Tenant webhooks (ADR 0040): their ledger and outbox, the fan-out's consumer on the
        // budget events and the delivery worker's on the outbox.
        w.eventsWildcard,
        w.outboxSubject,
        ...readStream(w.eventsStream),
        ...orderedConsumers(w.eventsStream, w.eventsWildcard),
        ...durable(n.budgetEventsStream, w.fanoutDurable),
        ...durable(w.outboxStream, w.deliveryDurable),
      ],
      deny: [],
    },
    subscribe: { allow: [`${serviceInboxPrefix(service)}.>`, n.requestWildcard('budget')] },
    // Admit and Settle over core request/reply (ADR 0025) are answered on the request's reply subject.
    allowResponses: true,
  };
}

function orchestrator(n: TallyNames): NatsUserPermissions {
  const service: TallyService = 'agent-orchestrator';
  const abort = `${n.namespace}.work.abort`;
  return {
    user: service,
    passwordEnv: 'AGENT_ORCHESTRATOR_NATS_PASSWORD',
    publish: {
      allow: [
        n.workEventsWildcard,
        // Output too large for its event, written before it and read back by the API (ADR 0019).
        n.workOutputWildcard,
        n.workQueueSubject,
        n.workLiveWildcard,
        abort,
        n.deadLetterWildcard,
        n.requestWildcard('budget'),
        n.commandWildcard('budget'),
        ...streamInfos(n),
        ...readStream(n.workEventsStream),
        ...orderedConsumers(n.workEventsStream, n.workEventsWildcard),
        ...readStream(n.workOutputStream),
        ...readStream(n.directoryEventsStream),
        ...orderedConsumers(n.directoryEventsStream, n.directoryEventsWildcard),
        // The grants an MCP session offers are read from the capability's CapabilityIssued event,
        // by direct get only: no consumer on a budget stream.
        `${API}.DIRECT.GET.${n.budgetEventsStream}`,
        `${API}.DIRECT.GET.${n.budgetEventsStream}.>`,
        ...durable(n.workQueueStream, DISPATCH_CONSUMER),
        ...durable(n.commandsStream, durableNameFor('work')),
        // Its own reply cache (work commands), and the authority's read for budget commands whose reply went astray.
        ...kv(n.commandRepliesBucket('work')),
        ...kvRead(n.commandRepliesBucket('budget')),
        ...leases(n, service),
        ...kv(n.signatureReplayBucket('work')),
        // Revocations (ADR 0049) are only followed here, never written: an ordered consumer on
        // the bucket's stream, filtered to its keys, and the stream's info (streamInfos).
        ...followKv(n.revocationsBucket),
        // Work submitted over NATS (ADR 0003) is answered on the submitter's inbox, named in a
        // header; never the authority's or the operator's.
        '_INBOX.>',
      ],
      deny: [`${serviceInboxPrefix('budget-authority')}.>`, `${OPERATOR_INBOX_PREFIX}.>`],
    },
    subscribe: { allow: [`${serviceInboxPrefix(service)}.>`, n.workLiveWildcard, abort] },
    allowResponses: false,
  };
}

/** The operator commands manage every stream, consumer and bucket, and read their own inbox only. */
function operator(): NatsUserPermissions {
  return {
    user: OPERATOR_NATS_USER,
    passwordEnv: 'TALLY_OPERATOR_NATS_PASSWORD',
    publish: { allow: [`${API}.>`, '$KV.>', '$JS.SNAPSHOT.>'], deny: [] },
    subscribe: { allow: [`${OPERATOR_INBOX_PREFIX}.>`] },
    allowResponses: true,
  };
}

export function tallyNatsPermissions(namespace = 'tally'): NatsUserPermissions[] {
  const n = tallyNames(namespace);
  return [authority(n), orchestrator(n), operator()];
}
