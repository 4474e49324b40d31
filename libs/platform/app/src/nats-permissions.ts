// The one source of truth for what each Tally NATS user may do (ADR 0015): publish and
// subscribe allow lists naming exactly the JetStream API subjects each service needs (per
// stream and consumer), its own core subjects, and its own inbox. Replies to requests go out
// through allow_responses, never a blanket `_INBOX.>`. deploy/nats/ and the NATS ConfigMap
// in deploy/k8s/ are generated from here (`npm run nats:config`); a test checks that the
// checked-in files match, and another runs them on a real nats-server.
import { tallyNames, type TallyNames } from '@tally/contracts';
import { kvStreamName } from '@tally/platform-jetstream';
import { durableNameFor } from '@tally/platform-nest';
import { serviceInboxPrefix } from './nats-runtime.js';
import { leaseBucketName, MIGRATIONS_LEASE_KEY, projectorLeaseKey } from './service-database.js';
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

const list = (items: readonly string[], indent: string) =>
  `[\n${items.map((s) => `${indent}  ${JSON.stringify(s)}`).join('\n')}\n${indent}]`;

function renderUser(p: NatsUserPermissions): string {
  const i = '        ';
  const deny = p.publish.deny.length > 0 ? `\n${i}    deny: ${list(p.publish.deny, `${i}    `)}` : '';
  return [
    '      {',
    `        user: ${p.user}`,
    `        password: $${p.passwordEnv}`,
    '        permissions: {',
    `          publish: {\n${i}    allow: ${list(p.publish.allow, `${i}    `)}${deny}\n${i}  }`,
    `          subscribe: {\n${i}    allow: ${list(p.subscribe.allow, `${i}    `)}\n${i}  }`,
    ...(p.allowResponses ? ['          allow_responses: true'] : []),
    '        }',
    '      }',
  ].join('\n');
}

const GENERATED = (what: string) =>
  `# GENERATED from libs/platform/app/src/nats-permissions.ts by \`npm run nats:config\`: ${what}\n` +
  '# Do not edit; change the module and regenerate (a test checks that this file matches).\n';

/** The accounts block: one JetStream account, one user per service and one for the operator commands. */
export function renderAccountsConf(namespace = 'tally'): string {
  const users = tallyNatsPermissions(namespace).map(renderUser).join('\n');
  return (
    GENERATED('the NATS users of Tally and what each may publish and subscribe.') +
    '# Each password is read from the nats-server process environment.\n' +
    `accounts {\n  TALLY {\n    jetstream: enabled\n    users: [\n${users}\n    ]\n  }\n}\n`
  );
}

/**
 * The production server config. Settings only nats-server >= 2.10 understands stay in
 * sync.conf, so the permissions above can be run as they are on 2.9 (the test does).
 */
export function renderServerConf(): string {
  return (
    GENERATED('the production nats-server config.') +
    [
      '# JetStream with fsync before ack and a 3-node cluster (streams are R3); needs nats-server',
      '# >= 2.10.23 for sync.conf. See docs/adr/0002 and 0015.',
      'port: 4222',
      'http: 8222',
      '',
      'jetstream {',
      '  store_dir: /data/jetstream',
      '  max_memory_store: 1G',
      '  # Only the bounded streams (queues, dead letters) reserve their max_bytes here.',
      '  max_file_store: 100G',
      '  include ./sync.conf',
      '}',
      '',
      'cluster {',
      '  name: tally',
      '  port: 6222',
      '  routes: [',
      '    nats://nats-0.nats:6222',
      '    nats://nats-1.nats:6222',
      '    nats://nats-2.nats:6222',
      '  ]',
      '}',
      '',
      'include ./accounts.conf',
      '',
    ].join('\n')
  );
}

export function renderSyncConf(): string {
  return (
    GENERATED('nats-server >= 2.10 only, included in the jetstream block.') +
    '# Acks are only sent once the write is on disk.\nsync_interval: always\n'
  );
}

/** Every generated file under deploy/, by path. */
export function natsDeployFiles(): Record<string, string> {
  const conf = {
    'nats-server.conf': renderServerConf(),
    'sync.conf': renderSyncConf(),
    'accounts.conf': renderAccountsConf(),
  };
  const indent = (text: string) =>
    text
      .split('\n')
      .map((l) => (l ? `    ${l}` : l))
      .join('\n');
  const configMap =
    GENERATED('the NATS servers config as a ConfigMap.') +
    '# Mount it at /etc/nats-config in the NATS StatefulSet (e.g. the official chart with\n' +
    '# config.merge disabled and this ConfigMap as its configMap) and start the server with\n' +
    '# -c /etc/nats-config/nats-server.conf; the passwords come from the tally-nats-users Secret\n' +
    '# as environment variables of the server.\n' +
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nats-config\n  labels: { app.kubernetes.io/name: nats, app.kubernetes.io/part-of: tally }\ndata:\n' +
    Object.entries(conf)
      .map(([name, text]) => `  ${name}: |\n${indent(text)}`)
      .join('');
  return {
    ...Object.fromEntries(Object.entries(conf).map(([name, text]) => [`deploy/nats/${name}`, text])),
    'deploy/k8s/nats-config.yaml': configMap,
  };
}
