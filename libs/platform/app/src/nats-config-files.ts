// The files `npm run nats:config` writes (deploy/nats/ and the NATS ConfigMap in deploy/kustomize/base/),
// rendered from the users and permissions of nats-permissions.ts, the one source of truth.
import { tallyNatsPermissions, type NatsUserPermissions } from './nats-permissions.js';

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
    '# The NATS StatefulSet (nats.yaml) mounts it at /etc/nats-config and starts the server with\n' +
    '# -c /etc/nats-config/nats-server.conf; the passwords come from the tally-nats-users Secret\n' +
    '# as environment variables of the server.\n' +
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nats-config\n  labels: { app.kubernetes.io/name: nats, app.kubernetes.io/part-of: tally }\ndata:\n' +
    Object.entries(conf)
      .map(([name, text]) => `  ${name}: |\n${indent(text)}`)
      .join('');
  return {
    ...Object.fromEntries(Object.entries(conf).map(([name, text]) => [`deploy/nats/${name}`, text])),
    'deploy/kustomize/base/nats-config.yaml': configMap,
  };
}
