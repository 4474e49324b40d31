// Proves issue 23 item 2 (ADR 0063): each overlay of deploy/kustomize renders with
// `kubectl kustomize` into an install that holds together. Every object is named; the base
// names no namespace and the overlay sets one; every workload has resources, probes and a
// non-root pod, and runs images pinned by digest (or the release's placeholder); dev runs one
// replica of each and a single NATS server with R1 streams, prod two or more and a three-server
// JetStream cluster with R3 streams; disruption budgets, Services, the Ingress and the
// PodMonitor all point at pods, Services and ports that exist; the backup CronJob runs
// `tally backup`. Each rule is also shown to catch a broken copy, so a rule that checks nothing fails.
import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { loadConfig, renderServerConf } from '@tally/platform-app';
import { DIGEST_PLACEHOLDER, KUSTOMIZE_DIR, render, renderOverlay, type Overlay } from './kustomize-render.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const NAMESPACE: Record<Overlay, string> = { dev: 'tally-dev', prod: 'tally' };
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition']);
const WORKLOADS = new Set(['Deployment', 'StatefulSet']);

const nameOf = (o: Json) => `${o['kind']}/${o['metadata']?.['name']}`;

interface Pod {
  readonly owner: string;
  readonly labels: Json;
  readonly spec: Json;
}

function pods(objects: Json[]): Pod[] {
  return objects.flatMap((o): Pod[] => {
    const template = o['kind'] === 'CronJob' ? o['spec']['jobTemplate']['spec']['template'] : o['spec']?.['template'];
    if (!template?.['spec']?.['containers']) return [];
    return [{ owner: nameOf(o), labels: template['metadata']?.['labels'] ?? {}, spec: template['spec'] }];
  });
}

function containersOf(spec: Json): Json[] {
  return [...(spec['initContainers'] ?? []), ...(spec['containers'] ?? [])];
}

function matches(selector: Json, labels: Json): boolean {
  const wanted = Object.entries((selector['matchLabels'] ?? {}) as Json);
  const expressions = (selector['matchExpressions'] ?? []) as Json[];
  return (
    wanted.length + expressions.length > 0 &&
    wanted.every(([k, v]) => labels[k] === v) &&
    expressions.every((e) => e['operator'] === 'In' && (e['values'] as string[]).includes(labels[e['key']]))
  );
}

const find = (objects: Json[], kind: string, name: string) =>
  objects.find((o) => o['kind'] === kind && o['metadata']['name'] === name);

// Each rule returns its problems, one readable line each; an empty list is a pass.

function unnamed(objects: Json[], namespace: string): string[] {
  return objects.flatMap((o, i) => {
    const problems: string[] = [];
    if (!o['apiVersion'] || !o['kind'] || !o['metadata']?.['name'])
      problems.push(`object ${i} lacks apiVersion/kind/name`);
    if (!CLUSTER_SCOPED.has(o['kind']) && o['metadata']?.['namespace'] !== namespace)
      problems.push(`${nameOf(o)} is in namespace ${o['metadata']?.['namespace']}, not ${namespace}`);
    return problems;
  });
}

function unfitWorkloads(objects: Json[]): string[] {
  const problems: string[] = [];
  for (const o of objects.filter((x) => WORKLOADS.has(x['kind']))) {
    const spec = o['spec']['template']['spec'] as Json;
    if (spec['securityContext']?.['runAsNonRoot'] !== true) problems.push(`${nameOf(o)}: pod not runAsNonRoot`);
    for (const c of spec['containers'] as Json[]) {
      const at = `${nameOf(o)}/${c['name']}`;
      const resources = (c['resources'] ?? {}) as Json;
      if (!resources['requests']?.['cpu'] || !resources['requests']?.['memory'] || !resources['limits']?.['memory'])
        problems.push(`${at}: no cpu/memory requests and memory limit`);
      if (!c['readinessProbe'] || !c['livenessProbe']) problems.push(`${at}: no readiness and liveness probes`);
    }
  }
  for (const pod of pods(objects))
    for (const c of containersOf(pod.spec)) {
      const image = String(c['image']);
      if (!/@sha256:[0-9a-f]{64}$/.test(image) && !image.endsWith(`@${DIGEST_PLACEHOLDER}`))
        problems.push(`${pod.owner}/${c['name']}: image ${image} is not pinned by digest`);
    }
  return problems;
}

/** Services, PodDisruptionBudgets and the PodMonitor select pods that exist, by ports those pods declare. */
function danglingSelectors(objects: Json[]): string[] {
  const all = pods(objects);
  const problems: string[] = [];
  const portsOf = (selected: Pod[]) =>
    new Set(
      selected.flatMap((p) =>
        containersOf(p.spec).flatMap((c) => ((c['ports'] ?? []) as Json[]).map((x) => x['name'])),
      ),
    );
  for (const service of objects.filter((o) => o['kind'] === 'Service')) {
    const selected = all.filter((p) => matches({ matchLabels: service['spec']['selector'] }, p.labels));
    if (selected.length === 0) problems.push(`${nameOf(service)} selects no pods`);
    for (const port of service['spec']['ports'] as Json[])
      if (!portsOf(selected).has(port['targetPort']))
        problems.push(`${nameOf(service)} targets no port ${port['targetPort']}`);
  }
  for (const pdb of objects.filter((o) => o['kind'] === 'PodDisruptionBudget')) {
    const owners = objects.filter(
      (o) => WORKLOADS.has(o['kind']) && matches(pdb['spec']['selector'], o['spec']['template']['metadata']['labels']),
    );
    if (owners.length !== 1) problems.push(`${nameOf(pdb)} selects ${owners.length} workloads`);
    // A budget that keeps every replica up blocks every drain.
    for (const owner of owners) {
      const replicas = Number(owner['spec']['replicas'] ?? 1);
      const minAvailable = pdb['spec']['minAvailable'];
      if (minAvailable !== undefined ? Number(minAvailable) >= replicas : Number(pdb['spec']['maxUnavailable']) < 1)
        problems.push(`${nameOf(pdb)} lets no ${nameOf(owner)} replica of ${replicas} be evicted`);
    }
  }
  for (const monitor of objects.filter((o) => o['kind'] === 'PodMonitor')) {
    const selected = all.filter((p) => matches(monitor['spec']['selector'], p.labels));
    const owners = selected.map((p) => p.owner).sort();
    if (owners.join() !== 'Deployment/agent-orchestrator,Deployment/budget-authority')
      problems.push(`${nameOf(monitor)} selects ${owners.join(', ') || 'nothing'}, not both services`);
    for (const endpoint of monitor['spec']['podMetricsEndpoints'] as Json[])
      for (const pod of selected)
        if (!portsOf([pod]).has(endpoint['port']))
          problems.push(`${nameOf(monitor)}: ${pod.owner} has no port ${endpoint['port']}`);
  }
  return problems;
}

function danglingIngress(objects: Json[]): string[] {
  const problems: string[] = [];
  for (const ingress of objects.filter((o) => o['kind'] === 'Ingress'))
    for (const rule of ingress['spec']['rules'] as Json[])
      for (const path of rule['http']['paths'] as Json[]) {
        const backend = path['backend']['service'] as Json;
        const service = find(objects, 'Service', backend['name']);
        const port = ((service?.['spec']['ports'] ?? []) as Json[]).find(
          (p) => p['name'] === backend['port']['name'] || p['port'] === backend['port']['number'],
        );
        if (!port)
          problems.push(`${nameOf(ingress)} ${rule['host']}${path['path']} -> no Service/port ${backend['name']}`);
      }
  return problems;
}

function replicasOf(objects: Json[]): Record<string, number> {
  return Object.fromEntries(
    objects.filter((o) => WORKLOADS.has(o['kind'])).map((o) => [nameOf(o), Number(o['spec']['replicas'])]),
  );
}

/** The config a container runs with: its ConfigMap's tally.yaml and its TALLY_* environment, as the loader reads them. */
function effectiveConfig(objects: Json[], container: Json) {
  const file = join(mkdtempSync(join(tmpdir(), 'tally-kustomize-')), 'tally.yaml');
  writeFileSync(file, String(find(objects, 'ConfigMap', 'tally-config')!['data']['tally.yaml']));
  const env: Record<string, string> = {};
  for (const e of (container['env'] ?? []) as Json[]) if (typeof e['value'] === 'string') env[e['name']] = e['value'];
  return loadConfig({ ...env, TALLY_CONFIG: file, NATS_URL: 'nats://nats:4222' });
}

function natsServerConf(objects: Json[]): string {
  return String(find(objects, 'ConfigMap', 'nats-config')!['data']['nats-server.conf']);
}

describe('issue 23 item 2 Kustomize base and overlays (ADR 0063)', () => {
  it('ADR 0063 the base names no namespace, so the overlay decides where Tally runs', () => {
    const base = render(`${KUSTOMIZE_DIR}/base`);
    expect(base.length).toBeGreaterThanOrEqual(10);
    expect(base.filter((o) => o['metadata']['namespace'] !== undefined).map(nameOf)).toEqual([]);
    expect(base.filter((o) => /\.svc\.cluster\.local/.test(JSON.stringify(o))).map(nameOf)).toEqual([]);
  });

  describe.each(['dev', 'prod'] as const)('overlay %s', (overlay) => {
    const objects = renderOverlay(overlay);

    it(`23.2 every object has apiVersion, kind and a name, in namespace ${NAMESPACE[overlay]}`, () => {
      expect(unnamed(objects, NAMESPACE[overlay])).toEqual([]);
      const broken = structuredClone(objects);
      delete broken[0]!['metadata']['name'];
      broken[1]!['metadata']['namespace'] = 'default';
      expect(unnamed(broken, NAMESPACE[overlay])).toHaveLength(2);
    });

    it('23.2 every Deployment and StatefulSet has resources, probes and a runAsNonRoot pod, and every image is pinned by digest or the release placeholder', () => {
      expect(unfitWorkloads(objects)).toEqual([]);
      const broken = structuredClone(objects);
      const deployment = broken.find((o) => o['kind'] === 'Deployment')!;
      const container = deployment['spec']['template']['spec']['containers'][0];
      delete container['readinessProbe'];
      delete container['resources'];
      container['image'] = 'tally:0.1.0';
      deployment['spec']['template']['spec']['securityContext']['runAsNonRoot'] = false;
      expect(unfitWorkloads(broken)).toHaveLength(4);
    });

    it('23.2 Services, PodDisruptionBudgets and the PodMonitor select pods that exist, on ports those pods declare; the Ingress names Services and ports that exist', () => {
      expect(danglingSelectors(objects)).toEqual([]);
      expect(danglingIngress(objects)).toEqual([]);
      const broken = structuredClone(objects);
      const service = find(broken, 'Service', 'budget-authority')!;
      service['spec']['selector'] = { 'app.kubernetes.io/name': 'budget-authoritee' };
      find(broken, 'Service', 'agent-orchestrator')!['spec']['ports'][0]['targetPort'] = 'metric';
      expect(danglingSelectors(broken).sort()).toEqual([
        'Service/agent-orchestrator targets no port metric',
        'Service/budget-authority selects no pods',
        'Service/budget-authority targets no port http',
      ]);
    });
  });

  it('23.2 dev runs one replica of each service and one NATS server, whose config has no cluster and whose streams are R1', () => {
    const objects = renderOverlay('dev');
    expect(replicasOf(objects)).toEqual({
      'Deployment/budget-authority': 1,
      'Deployment/agent-orchestrator': 1,
      'StatefulSet/nats': 1,
    });
    // The generated config without its cluster block: accounts and sync settings stay generated.
    const settings = (conf: string) =>
      conf
        .split('\n')
        .filter((line) => !line.trimStart().startsWith('#'))
        .join('\n')
        .trim();
    expect(settings(renderServerConf())).toMatch(/\ncluster \{/);
    expect(settings(natsServerConf(objects))).toBe(settings(renderServerConf().replace(/\ncluster \{[^}]*\}\n/, '')));
    const job = find(objects, 'Job', 'tally-migrate')!;
    const deployments = objects.filter((o) => o['kind'] === 'Deployment');
    const tallyContainers = [
      ...containersOf(job['spec']['template']['spec']),
      ...deployments.flatMap((d) => containersOf(d['spec']['template']['spec'])),
    ];
    expect(tallyContainers).toHaveLength(4);
    for (const c of tallyContainers)
      expect({ c: c['name'], r: effectiveConfig(objects, c).streams.replicas }).toEqual({ c: c['name'], r: 1 });
    // Nothing a dev cluster may lack: no prometheus-operator, KEDA or disruption budgets.
    expect(
      objects.filter((o) =>
        ['PodMonitor', 'PrometheusRule', 'ScaledObject', 'PodDisruptionBudget'].includes(o['kind']),
      ),
    ).toEqual([]);
  });

  it('23.2 prod runs two or more replicas of each service and a three-server JetStream cluster routed by its headless Service, with R3 streams', () => {
    const objects = renderOverlay('prod');
    const replicas = replicasOf(objects);
    expect(replicas['Deployment/budget-authority']).toBeGreaterThanOrEqual(2);
    expect(replicas['Deployment/agent-orchestrator']).toBeGreaterThanOrEqual(2);
    expect(replicas['StatefulSet/nats']).toBe(3);
    expect(
      find(objects, 'ScaledObject', 'agent-orchestrator-workers')!['spec']['minReplicaCount'],
    ).toBeGreaterThanOrEqual(2);
    const nats = find(objects, 'StatefulSet', 'nats')!;
    const headless = find(objects, 'Service', nats['spec']['serviceName'])!;
    expect(headless['spec']['clusterIP']).toBe('None');
    expect(headless['spec']['publishNotReadyAddresses']).toBe(true);
    // The cluster block routes to each pod of the StatefulSet by its stable name, on the cluster port.
    const conf = natsServerConf(objects);
    const routes = [...conf.matchAll(/nats:\/\/([a-z0-9.-]+):(\d+)/g)].map((m) => `${m[1]}:${m[2]}`);
    expect(routes).toEqual([0, 1, 2].map((i) => `nats-${i}.${headless['metadata']['name']}:6222`));
    expect(conf).toMatch(/jetstream \{/);
    expect(headless['spec']['ports']).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'cluster', port: 6222 })]),
    );
    // Server names are the pod names: JetStream clustering needs them stable and unique.
    expect(nats['spec']['template']['spec']['containers'][0]['args']).toEqual(
      expect.arrayContaining(['--name', '$(POD_NAME)']),
    );
    const authority = find(objects, 'Deployment', 'budget-authority')!;
    expect(effectiveConfig(objects, authority['spec']['template']['spec']['containers'][0]).streams.replicas).toBe(3);
    // Every Tally workload and NATS has a disruption budget.
    const budgets = objects.filter((o) => o['kind'] === 'PodDisruptionBudget').map((o) => o['metadata']['name']);
    expect(budgets.sort()).toEqual(['agent-orchestrator', 'budget-authority', 'nats']);
    const broken = structuredClone(objects);
    find(broken, 'PodDisruptionBudget', 'nats')!['spec'] = { minAvailable: 3, selector: nats['spec']['selector'] };
    find(broken, 'PodMonitor', 'tally')!['spec']['podMetricsEndpoints'][0]['port'] = 'http-metrics';
    expect(danglingSelectors(broken)).toHaveLength(3); // the budget, and the port on each service
    // KEDA reads consumer lag from the NATS Service in this overlay's namespace.
    const trigger = find(objects, 'ScaledObject', 'agent-orchestrator-workers')!['spec']['triggers'][0];
    expect(trigger['metadata']['natsServerMonitoringEndpoint']).toBe(`nats.${NAMESPACE.prod}.svc.cluster.local:8222`);
  });

  it('23.2 prod has an Ingress for both APIs, a PrometheusRule, and a nightly CronJob that runs tally backup into a new directory as the operator NATS user with the signing key', () => {
    const objects = renderOverlay('prod');
    const ingress = objects.find((o) => o['kind'] === 'Ingress')!;
    const backends = (ingress['spec']['rules'] as Json[]).flatMap((r) =>
      (r['http']['paths'] as Json[]).map((p) => p['backend']['service']['name']),
    );
    expect(backends.sort()).toEqual(['agent-orchestrator', 'budget-authority']);
    expect(danglingIngress(objects)).toEqual([]);
    const broken = structuredClone(objects);
    broken.find((o) => o['kind'] === 'Ingress')!['spec']['rules'][0]['http']['paths'][0]['backend']['service']['port'] =
      {
        name: 'metrics',
      };
    expect(danglingIngress(broken)).toHaveLength(1);
    expect(objects.filter((o) => o['kind'] === 'PrometheusRule').length).toBe(1);
    const cron = find(objects, 'CronJob', 'tally-backup')!;
    expect(cron['spec']['concurrencyPolicy']).toBe('Forbid');
    const pod = cron['spec']['jobTemplate']['spec']['template'];
    const container = pod['spec']['containers'][0];
    expect(container['args']).toEqual(['dist/apps/cli/src/main.js', 'backup', '--out', '/backups/$(POD_NAME)']);
    const env = Object.fromEntries((container['env'] as Json[]).map((e) => [e['name'], e]));
    expect(env['POD_NAME']['valueFrom']['fieldRef']['fieldPath']).toBe('metadata.name');
    expect(env['NATS_URL']['valueFrom']['secretKeyRef']['key']).toBe('tally-operator-nats-url');
    expect(env['TALLY_SIGNING_KEY']['valueFrom']['secretKeyRef']['key']).toBe('authority-signing-key');
    const backups = (pod['spec']['volumes'] as Json[]).find((v) => v['name'] === 'backups')!;
    expect(find(objects, 'PersistentVolumeClaim', backups['persistentVolumeClaim']['claimName'])).toBeDefined();
    expect(pod['metadata']['labels']['app.kubernetes.io/name']).toBe('tally-backup');
  });

  it('ADR 0063 each overlay pins the images in its kustomization with a digest, the placeholder until a release sets it', () => {
    for (const overlay of ['dev', 'prod'] as const) {
      const kustomization = parse(
        readFileSync(`${KUSTOMIZE_DIR}/overlays/${overlay}/kustomization.yaml`, 'utf8'),
      ) as Json;
      const images = Object.fromEntries((kustomization['images'] as Json[]).map((i) => [i['name'], i['digest']]));
      expect(Object.keys(images).sort()).toEqual(['nats', 'tally']);
      for (const digest of Object.values(images))
        expect(String(digest)).toMatch(new RegExp(`^(sha256:[0-9a-f]{64}|${DIGEST_PLACEHOLDER})$`));
    }
  });
});
