// Proves issue 9 items 2 and 4 on a real nats-server 2.9 running the checked-in, generated
// deploy/nats/accounts.conf: `tally provision` as the operator user creates everything; a
// service booting with nats.provision: check refuses, naming the difference, until it is
// there; then both services, each logged in as its own least-privilege user, run the metered
// smoke path (issue, admit, settle, a work unit end to end, a revocation refused by the other
// service) without one permission violation, and each is refused what would let it wreck or
// read the other's data, a KV bucket included: no user can roll one up or purge it, nor write
// another service's bucket or keys, the revocations bucket that only the authority writes among
// them (ADR 0051, ADR 0049).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream, jetstreamManager, AckPolicy, type JetStreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { tallyNames } from '@tally/contracts';
import {
  leaseBucketName,
  MIGRATIONS_LEASE_KEY,
  natsDeployFiles,
  projectorLeaseKey,
  serviceInboxPrefix,
  OPERATOR_INBOX_PREFIX,
  webhookNames,
} from '@tally/platform-app';
import { PrivateNatsServer, ServiceProcess } from '@tally/testing';
import { adminHeaders } from '../support/auth.js';
import { runTally } from '../cli/support/run-cli.js';
import { OrchestratorHarness, workBody } from '../orchestrator/orchestrator.harness.js';
import {
  outcome,
  probeBucket,
  PURGE_REFUSED,
  ROLLUP_REFUSED,
  subscribeOutcome,
  type BucketProbe,
} from './nats-probes.js';

const PASSWORDS = {
  'budget-authority': `ba-${randomBytes(8).toString('hex')}`,
  'agent-orchestrator': `ao-${randomBytes(8).toString('hex')}`,
  'tally-operator': `op-${randomBytes(8).toString('hex')}`,
};
type User = keyof typeof PASSWORDS;
const names = tallyNames('tally');
/** The authority's streams the orchestrator must not touch: the budget ledger, the directory, the webhooks' ledger. */
const AUTHORITY_STREAMS = [names.budgetEventsStream, names.directoryEventsStream, webhookNames(names).eventsStream];
const ORCHESTRATOR_STREAMS = [names.workEventsStream, names.workQueueStream];
/** The generated file runs as it is: the namespace it was generated for, on a server of this test's own. */
const STACK_ENV = {
  TALLY_NAMESPACE: 'tally',
  TALLY__STREAMS__QUEUE_MAX_BYTES: String(64 * 1024 * 1024),
  TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(64 * 1024 * 1024),
};

let server: PrivateNatsServer;
const h = new OrchestratorHarness({ prefix: 'perm', env: { TALLY__ORCHESTRATOR__BUDGET_MODE: 'metered' } });
const loginEnv = (user: User) => ({
  ...STACK_ENV,
  NATS_URL: server.url,
  NATS_USER: user,
  NATS_PASSWORD: PASSWORDS[user],
  TALLY__NATS__PROVISION: 'check',
});
const violations = () => server.logs().match(/^.*Violation.*$/gm) ?? [];

beforeAll(async () => {
  server = await PrivateNatsServer.start({
    // The checked-in file as it is (includes resolve relative to the server's own config file).
    config: readFileSync('deploy/nats/accounts.conf', 'utf8'),
    env: {
      BUDGET_AUTHORITY_NATS_PASSWORD: PASSWORDS['budget-authority'],
      AGENT_ORCHESTRATOR_NATS_PASSWORD: PASSWORDS['agent-orchestrator'],
      TALLY_OPERATOR_NATS_PASSWORD: PASSWORDS['tally-operator'],
    },
  });
}, 30_000);
afterAll(async () => {
  await h.dispose();
  await server?.dispose();
}, 60_000);

describe('Issue 9: least-privilege NATS, generated and run', () => {
  it('Issue 9: deploy/nats and the NATS ConfigMap are exactly what the permissions module generates', () => {
    for (const [path, text] of Object.entries(natsDeployFiles()))
      expect({ path, text: readFileSync(path, 'utf8') }).toEqual({ path, text });
  });

  it('Issue 9: with nats.provision check a service refuses to start, naming what is missing, until tally provision ran', async () => {
    const before = await ServiceProcess.start({
      service: 'budget-authority',
      env: { ...loginEnv('budget-authority'), DATABASE_URL: '', TALLY_SQLITE_PATH: join(h.dir, 'refused.sqlite') },
      waitReady: false,
    });
    expect(await before.waitExit(60_000)).toBe(78);
    expect(before.logs()).toContain(`stream ${names.budgetEventsStream} is missing`);
    expect(before.logs()).toContain('Run `tally provision`');
    expect(before.logs()).not.toMatch(/^\s+at /m);

    const operator = { ...STACK_ENV, NATS_URL: server.url, NATS_USER: 'tally-operator' };
    const provisioned = await runTally(['provision'], { ...operator, NATS_PASSWORD: PASSWORDS['tally-operator'] });
    expect(provisioned.stderr).toBe('');
    expect(provisioned.code).toBe(0);
    expect(provisioned.stdout).toContain(`stream ${names.budgetEventsStream} created`);
    expect(provisioned.stdout).toContain(`consumer dispatch-workers on ${names.workQueueStream} created`);
    expect(provisioned.stdout).toContain('KV bucket TALLY_LEASES created');
    // Running it again changes nothing.
    const again = await runTally(['provision'], { ...operator, NATS_PASSWORD: PASSWORDS['tally-operator'] });
    expect(again.code).toBe(0);
    expect(again.stdout).not.toMatch(/created|updated/);

    // A configuration that disagrees with what was provisioned is named, setting by setting.
    const differs = await ServiceProcess.start({
      service: 'budget-authority',
      env: {
        ...loginEnv('budget-authority'),
        DATABASE_URL: '',
        TALLY_SQLITE_PATH: join(h.dir, 'refused.sqlite'),
        TALLY__STREAMS__DEAD_LETTER_MAX_AGE_MS: String(2 * 86_400_000),
      },
      waitReady: false,
    });
    expect(await differs.waitExit(60_000)).toBe(78);
    expect(differs.logs()).toContain(
      `stream ${names.deadLetterStream}: max_age is 2592000000000000, expected 172800000000000`,
    );
  }, 180_000);

  it('Issue 9: each service as its own user runs the metered smoke path with no permission violation', async () => {
    await h.startAuthority(loginEnv('budget-authority'));
    await h.start(1, loginEnv('agent-orchestrator'));
    const authority = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(`${h.authority!.url}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...adminHeaders(), ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(res.status).toBeLessThan(300);
      return (await res.json()) as Record<string, unknown>;
    };
    const subject = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
    const issue = {
      subject_public_key: subject,
      ttl_seconds: 3600,
      grants: [
        {
          server_id: 'scripted',
          tool_name: 'ok-model',
          max_invocations: 5,
          max_cost_per_invocation: 1_000,
          max_total_cost_units: 5_000,
          currency: 'USD',
        },
      ],
    };
    // With an Idempotency-Key: the authority user writes and reads its record in the idempotency bucket.
    const cap = await authority('POST', '/v1/capabilities', issue, { 'idempotency-key': 'least-privilege' });
    expect((await authority('POST', '/v1/capabilities', issue, { 'idempotency-key': 'least-privilege' }))['id']).toBe(
      cap['id'],
    );
    h.provider().script('ok-model', [
      { kind: 'stream', chunks: ['least privilege'], usage: { input_tokens: 5, output_tokens: 3 } },
    ]);
    const body = workBody({ token: cap['token'] });
    expect((await h.post('/v1/work', body)).status).toBe(202);
    expect(await h.terminal(body['work_id'] as string)).toMatchObject({
      status: 'completed',
      output: 'least privilege',
    });
    const receipt = (await h.get(`/v1/work/${body['work_id']}/receipt`)).body;
    expect(receipt['metered']).toBe(true);
    const usage = await h.eventually('the authority to record the settled cost', async () => {
      const grants = (await authority('GET', `/v1/capabilities/${cap['id']}/usage`))['grants'] as Record<
        string,
        unknown
      >[];
      return grants[0]!['realized_cost_units'] === 11 ? grants[0] : undefined;
    });
    expect(usage!['invocation_count']).toBe(1);
    // ADR 0049: the revoke writes the revocations bucket, the relay reads the ledger, and the
    // orchestrator's view follows the bucket, each as its own user.
    await authority('POST', `/v1/capabilities/${cap['id']}/revoke`, {});
    const refused = await h.eventually('the orchestrator to refuse the revoked token', async () => {
      const res = await h.post('/v1/work', workBody({ token: cap['token'] }));
      return res.status === 401 ? res.body : undefined;
    });
    expect(refused['type']).toBe('token_revoked');
    // Both services' readiness includes their projections, which run on connections of their own.
    for (const svc of [h.authority!, h.processes[0]!]) expect((await fetch(`${svc.url}/readyz`)).status).toBe(200);
    expect(violations()).toEqual([]);
  }, 240_000);

  it('Issue 9: the orchestrator user is refused the budget ledger, budget consumers, and anyone else’s replies', async () => {
    const refused = await probe('agent-orchestrator', 'budget-authority', AUTHORITY_STREAMS);
    expect(refused).toEqual(expectedRefusals('agent-orchestrator', 'budget-authority'));
  }, 60_000);

  it('Issue 9: the authority user is refused the same on the work streams', async () => {
    const refused = await probe('budget-authority', 'agent-orchestrator', ORCHESTRATOR_STREAMS);
    expect(refused).toEqual(expectedRefusals('budget-authority', 'agent-orchestrator'));
  }, 60_000);

  it('ADR 0051 no user can roll up or purge a KV bucket (the revocations bucket of ADR 0049 among them), nor write another service’s bucket or keys; its own keys it can', async () => {
    for (const user of Object.keys(PASSWORDS) as User[])
      expect({ user, outcomes: await probeBuckets(user) }).toEqual({ user, outcomes: expectedBucketOutcomes(user) });
  }, 60_000);
});

/** Each bucket with a key `user` may write (its own) and one it may not, as nats-permissions.ts grants them. */
function bucketProbes(user: User): BucketProbe[] {
  const mine = (owner: User, key = 'probe') =>
    user === owner || user === 'tally-operator' ? { ownKey: key } : { foreignKey: key };
  const other: User = user === 'budget-authority' ? 'agent-orchestrator' : 'budget-authority';
  const leases: BucketProbe =
    user === 'tally-operator'
      ? { bucket: leaseBucketName('tally'), ownKey: 'probe' }
      : { bucket: leaseBucketName('tally'), ownKey: MIGRATIONS_LEASE_KEY, foreignKey: projectorLeaseKey(other) };
  return [
    { bucket: names.commandRepliesBucket('budget'), ...mine('budget-authority') },
    { bucket: names.commandRepliesBucket('work'), ...mine('agent-orchestrator') },
    leases,
    { bucket: names.idempotencyBucket, ...mine('budget-authority') },
    { bucket: names.signatureReplayBucket('budget'), ...mine('budget-authority') },
    { bucket: names.signatureReplayBucket('work'), ...mine('agent-orchestrator') },
    // Written by the authority only; the orchestrator follows it (ADR 0049).
    { bucket: names.revocationsBucket, ...mine('budget-authority') },
  ];
}

function expectedBucketOutcomes(user: User): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of bucketProbes(user)) {
    // A user that may write a key of the bucket passes its permissions; the bucket itself refuses the roll-up.
    out[`rollup ${p.bucket}`] = p.ownKey === undefined ? 'refused' : ROLLUP_REFUSED;
    out[`purge ${p.bucket}`] = user === 'tally-operator' ? PURGE_REFUSED : 'refused';
    if (p.foreignKey !== undefined) out[`write ${p.bucket}.${p.foreignKey}`] = 'refused';
    if (p.ownKey !== undefined) out[`write ${p.bucket}.${p.ownKey}`] = 'allowed';
  }
  return out;
}

/** Logs in as `user` and tries, on every bucket, what would empty it or touch another's keys. */
async function probeBuckets(user: User): Promise<Record<string, string>> {
  const nc = await connect({ servers: server.url, user, pass: PASSWORDS[user], inboxPrefix: inboxOf(user) });
  try {
    const js = jetstream(nc, { timeout: 3_000 });
    const jsm = await jetstreamManager(nc, { timeout: 3_000 });
    const out: Record<string, string> = {};
    for (const p of bucketProbes(user)) await probeBucket(js, jsm, p, out);
    return out;
  } finally {
    await nc.close();
  }
}

function inboxOf(user: User): string {
  return user === 'tally-operator' ? OPERATOR_INBOX_PREFIX : serviceInboxPrefix(user);
}

/** The other service's ledger subject, by who is probing. */
function foreignEventSubject(other: User): string {
  return other === 'budget-authority' ? names.budgetEventSubject('probe') : names.workEventSubject('probe');
}

function expectedRefusals(user: User, other: User): Record<string, string> {
  const streams = other === 'budget-authority' ? AUTHORITY_STREAMS : ORCHESTRATOR_STREAMS;
  const out: Record<string, string> = { [`publish ${foreignEventSubject(other)}`]: 'refused' };
  for (const s of streams) {
    for (const action of ['delete', 'update', 'purge', 'create consumer', 'create durable consumer'])
      out[`${action} ${s}`] = 'refused';
  }
  for (const subject of ['_INBOX.>', `${serviceInboxPrefix(other)}.>`, `${OPERATOR_INBOX_PREFIX}.>`])
    out[`subscribe ${subject}`] = 'refused';
  void user;
  return out;
}

/** Logs in as `user` (with its own inbox prefix) and tries everything it must not do; returns what happened to each. */
async function probe(user: User, other: User, streams: string[]): Promise<Record<string, string>> {
  const nc = await connect({
    servers: server.url,
    user,
    pass: PASSWORDS[user],
    inboxPrefix: serviceInboxPrefix(user),
    timeout: 5_000,
  });
  try {
    const js = jetstream(nc, { timeout: 3_000 });
    const jsm = await jetstreamManager(nc, { timeout: 3_000 });
    const out: Record<string, string> = {};
    out[`publish ${foreignEventSubject(other)}`] = await outcome(js.publish(foreignEventSubject(other), '{}'));
    for (const s of streams) await probeStream(jsm, s, out);
    for (const subject of ['_INBOX.>', `${serviceInboxPrefix(other)}.>`, `${OPERATOR_INBOX_PREFIX}.>`])
      out[`subscribe ${subject}`] = await subscribeOutcome(nc, subject);
    return out;
  } finally {
    await nc.close();
  }
}

async function probeStream(jsm: JetStreamManager, stream: string, out: Record<string, string>): Promise<void> {
  out[`delete ${stream}`] = await outcome(jsm.streams.delete(stream));
  out[`update ${stream}`] = await outcome(jsm.streams.update(stream, { max_msgs: 1 }));
  out[`purge ${stream}`] = await outcome(jsm.streams.purge(stream));
  out[`create consumer ${stream}`] = await outcome(jsm.consumers.add(stream, { ack_policy: AckPolicy.None }));
  out[`create durable consumer ${stream}`] = await outcome(
    jsm.consumers.add(stream, { durable_name: 'probe', ack_policy: AckPolicy.Explicit }),
  );
}
