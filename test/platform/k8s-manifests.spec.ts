// Proves issue 9 item 9: every object each overlay of deploy/kustomize renders validates
// against the Kubernetes and KEDA schemas; every pod runs non-root with a read-only root
// filesystem, no privilege escalation and no capabilities; images are pinned to the release
// version or a digest; the NetworkPolicies let in only what must reach each service and NATS,
// the metrics ports only from Prometheus (ADR 0053); and the config the pods read is valid,
// with webhooks to loopback off.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { validateConfig } from '@tally/platform-app';
import { DIGEST_PLACEHOLDER, OVERLAYS, renderOverlay } from './kustomize-render.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;

/** prometheus-operator's kinds: no schema package for them here; kustomize.spec checks them structurally. */
const UNSCHEMAED_GROUPS = ['monitoring.coreos.com/'];

interface Manifest {
  /** The overlay that rendered it. */
  readonly file: string;
  readonly object: Json;
}

function manifests(overlay: (typeof OVERLAYS)[number]): Manifest[] {
  return renderOverlay(overlay).map((object) => ({ file: overlay, object }));
}

/** The schema model for an object: kubernetes-models for the built-in kinds, @kubernetes-models/keda for KEDA's. */
async function modelOf(object: Json): Promise<new (data: Json) => { validate(): void }> {
  const apiVersion = String(object['apiVersion']);
  const kind = String(object['kind']);
  const path = apiVersion.startsWith('keda.sh/')
    ? `@kubernetes-models/keda/${apiVersion}/${kind}`
    : `kubernetes-models/${apiVersion}/${kind}`;
  const module = (await import(path).catch(() => {
    throw new Error(`no schema for ${apiVersion} ${kind}`);
  })) as Record<string, new (data: Json) => { validate(): void }>;
  const model = module[kind];
  if (!model) throw new Error(`no schema for ${apiVersion} ${kind}`);
  return model;
}

async function schemaErrors(object: Json): Promise<string | undefined> {
  try {
    new (await modelOf(object))(object).validate();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

const WORKLOADS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'ReplicaSet']);

/** Every pod template in the manifests, with the object it belongs to. */
function pods(all: Manifest[]): { name: string; labels: Json; spec: Json }[] {
  return all
    .filter((m) => WORKLOADS.has(m.object['kind']) || m.object['kind'] === 'CronJob')
    .map((m) => {
      const template =
        m.object['kind'] === 'CronJob'
          ? m.object['spec']['jobTemplate']['spec']['template']
          : m.object['spec']['template'];
      return {
        name: `${m.object['kind']}/${m.object['metadata']['name']}`,
        labels: template['metadata']?.['labels'] ?? {},
        spec: template['spec'],
      };
    });
}

function containersOf(spec: Json): Json[] {
  return [...(spec['initContainers'] ?? []), ...(spec['containers'] ?? [])];
}

function matches(selector: Json, labels: Json): boolean {
  const wanted = (selector['matchLabels'] ?? {}) as Json;
  return Object.entries(wanted).every(([k, v]) => labels[k] === v);
}

/** Who the NetworkPolicies let reach pods with `labels` on TCP `port`, as readable peer descriptions. */
function allowedPeers(policies: Json[], labels: Json, port: number): string[] {
  const peers = new Set<string>();
  for (const policy of policies.filter((p) => matches(p['spec']['podSelector'], labels))) {
    for (const rule of policy['spec']['ingress'] ?? []) {
      const ports = (rule['ports'] ?? []) as Json[];
      if (ports.length > 0 && !ports.some((p) => p['port'] === port)) continue;
      const from = (rule['from'] ?? [{ anywhere: true }]) as Json[];
      for (const peer of from) {
        // A peer with both selectors admits only those pods of those namespaces (an AND).
        const parts: string[] = [];
        if (peer['anywhere']) parts.push('anywhere');
        if (peer['namespaceSelector'])
          parts.push(`namespace:${peer['namespaceSelector']['matchLabels']['kubernetes.io/metadata.name']}`);
        if (peer['podSelector']) parts.push(`pods:${peer['podSelector']['matchLabels']['app.kubernetes.io/name']}`);
        peers.add(parts.join('/'));
      }
    }
  }
  return [...peers].sort();
}

describe.each(OVERLAYS)('issue 9 item 9: Kubernetes manifests, overlay %s', (overlay) => {
  const all = manifests(overlay);

  it('9.9 every manifest validates against the Kubernetes and KEDA schemas, and an invalid one is refused', async () => {
    expect(all.length).toBeGreaterThanOrEqual(9);
    const errors: string[] = [];
    for (const m of all.filter((x) => !UNSCHEMAED_GROUPS.some((g) => String(x.object['apiVersion']).startsWith(g)))) {
      const problem = await schemaErrors(m.object);
      if (problem) errors.push(`${m.file} ${m.object['kind']}/${m.object['metadata']?.['name']}: ${problem}`);
    }
    expect(errors).toEqual([]);
    // The validator is live: a wrong type, a missing required field and an unknown kind fail.
    const deployment = all.find((m) => m.object['kind'] === 'Deployment')!.object;
    const broken = structuredClone(deployment);
    broken['spec']['template']['spec']['securityContext']['runAsNonRoot'] = 'yes';
    expect(await schemaErrors(broken)).toMatch(/runAsNonRoot must be boolean/);
    const scaled = structuredClone(
      all.find((m) => m.object['kind'] === 'ScaledObject')?.object ??
        manifests('prod').find((m) => m.object['kind'] === 'ScaledObject')!.object,
    );
    delete scaled['spec']['scaleTargetRef'];
    expect(await schemaErrors(scaled)).toMatch(/scaleTargetRef/);
    expect(await schemaErrors({ apiVersion: 'example.com/v1', kind: 'Nothing' })).toMatch(/no schema/);
  });

  it('9.9 every pod runs non-root with a read-only root filesystem, no privilege escalation, all capabilities dropped and an emptyDir for /tmp', () => {
    const found = pods(all);
    expect(found.map((p) => p.name).sort()).toEqual(
      expect.arrayContaining(['Deployment/agent-orchestrator', 'Deployment/budget-authority', 'Job/tally-migrate']),
    );
    for (const pod of found) {
      const podContext = (pod.spec['securityContext'] ?? {}) as Json;
      expect({ pod: pod.name, seccomp: podContext['seccompProfile']?.['type'] }).toEqual({
        pod: pod.name,
        seccomp: 'RuntimeDefault',
      });
      expect({ pod: pod.name, automount: pod.spec['automountServiceAccountToken'] }).toEqual({
        pod: pod.name,
        automount: false,
      });
      const emptyDirs = new Set(
        ((pod.spec['volumes'] ?? []) as Json[]).filter((v) => v['emptyDir']).map((v) => v['name']),
      );
      for (const c of containersOf(pod.spec)) {
        const ctx = (c['securityContext'] ?? {}) as Json;
        const runAsUser = ctx['runAsUser'] ?? podContext['runAsUser'];
        expect({
          container: `${pod.name}/${c['name']}`,
          runAsNonRoot: ctx['runAsNonRoot'] ?? podContext['runAsNonRoot'],
          rootUser: runAsUser === 0,
          allowPrivilegeEscalation: ctx['allowPrivilegeEscalation'],
          privileged: ctx['privileged'] ?? false,
          readOnlyRootFilesystem: ctx['readOnlyRootFilesystem'],
          dropsAll: ((ctx['capabilities']?.['drop'] ?? []) as string[]).includes('ALL'),
          adds: ctx['capabilities']?.['add'] ?? [],
          tmpIsEmptyDir: ((c['volumeMounts'] ?? []) as Json[]).some(
            (v) => v['mountPath'] === '/tmp' && emptyDirs.has(v['name']),
          ),
        }).toEqual({
          container: `${pod.name}/${c['name']}`,
          runAsNonRoot: true,
          rootUser: false,
          allowPrivilegeEscalation: false,
          privileged: false,
          readOnlyRootFilesystem: true,
          dropsAll: true,
          adds: [],
          tmpIsEmptyDir: true,
        });
      }
    }
  });

  it(`9.9 ADR 0063 every image is named by a digest (or the release's digest placeholder), never a tag such as ${VERSION} or latest`, () => {
    const images = pods(all).flatMap((p) => containersOf(p.spec).map((c) => String(c['image'])));
    expect(images.length).toBeGreaterThan(0);
    for (const image of images) {
      const pinned = /@sha256:[0-9a-f]{64}$/.test(image) || image.endsWith(`@${DIGEST_PLACEHOLDER}`);
      expect({ image, pinned, latest: /:latest(@|$)/.test(image) }).toEqual({ image, pinned: true, latest: false });
    }
  });

  it('9.9 NetworkPolicies let in only the ingress and the other service on each HTTP port, only Prometheus on each metrics port (ADR 0053), and only Tally on NATS', () => {
    const policies = all.filter((m) => m.object['kind'] === 'NetworkPolicy').map((m) => m.object);
    const denyAll = policies.find(
      (p) =>
        Object.keys(p['spec']['podSelector']).length === 0 &&
        (p['spec']['policyTypes'] as string[]).includes('Ingress') &&
        !p['spec']['ingress'],
    );
    expect(denyAll).toBeDefined();
    const labels = (name: string) => ({ 'app.kubernetes.io/name': name, 'app.kubernetes.io/part-of': 'tally' });
    const http = ['namespace:ingress-nginx'];
    expect(allowedPeers(policies, labels('budget-authority'), 7401)).toEqual(
      [...http, 'pods:agent-orchestrator'].sort(),
    );
    expect(allowedPeers(policies, labels('agent-orchestrator'), 7402)).toEqual(
      [...http, 'pods:budget-authority'].sort(),
    );
    const scraper = ['namespace:monitoring/pods:prometheus'];
    expect(allowedPeers(policies, labels('budget-authority'), 9464)).toEqual(scraper);
    expect(allowedPeers(policies, labels('agent-orchestrator'), 9465)).toEqual(scraper);
    const nats = { 'app.kubernetes.io/name': 'nats' };
    expect(allowedPeers(policies, nats, 4222)).toEqual([
      'pods:agent-orchestrator',
      'pods:budget-authority',
      'pods:tally-backup',
      'pods:tally-migrate',
    ]);
    expect(allowedPeers(policies, nats, 6222)).toEqual(['pods:nats']);
    expect(allowedPeers(policies, nats, 8222)).toEqual(['namespace:keda']);
    // Nothing else is open: another port on a service, and any port on an unlisted pod.
    expect(allowedPeers(policies, labels('budget-authority'), 9229)).toEqual([]);
    expect(allowedPeers(policies, labels('tally-migrate'), 7401)).toEqual([]);
    // Every Tally pod is covered by the policies (the deny-all at least).
    for (const pod of pods(all)) expect(policies.some((p) => matches(p['spec']['podSelector'], pod.labels))).toBe(true);
  });

  it('ADR 0053 each service declares its metrics port as configured, Prometheus is pointed at it, and the config turns webhooks to loopback off', () => {
    const configMap = all.find(
      (m) => m.object['kind'] === 'ConfigMap' && m.object['metadata']['name'] === 'tally-config',
    );
    const config = validateConfig(parse(configMap!.object['data']['tally.yaml']) as Json);
    expect(config.webhooks.allow_http_loopback).toBe(false);
    const wanted: Record<string, number> = {
      'Deployment/budget-authority': config.authority.metrics_port,
      'Deployment/agent-orchestrator': config.orchestrator.metrics_port,
    };
    for (const pod of pods(all).filter((p) => p.name in wanted)) {
      const template = all.find((m) => `${m.object['kind']}/${m.object['metadata']['name']}` === pod.name)!.object;
      const annotations = template['spec']['template']['metadata']['annotations'] as Json;
      const ports = containersOf(pod.spec).flatMap((c) => (c['ports'] ?? []) as Json[]);
      expect({
        pod: pod.name,
        metrics: ports.find((p) => p['name'] === 'metrics')?.['containerPort'],
        scraped: Number(annotations['prometheus.io/port']),
      }).toEqual({ pod: pod.name, metrics: wanted[pod.name], scraped: wanted[pod.name] });
    }
  });

  it('9.9 selectors agree: each Service, PodDisruptionBudget and ScaledObject points at pods or a Deployment that exist', () => {
    const found = pods(all);
    for (const m of all.filter((x) => ['Service', 'PodDisruptionBudget'].includes(x.object['kind']))) {
      const selector =
        m.object['kind'] === 'Service' ? { matchLabels: m.object['spec']['selector'] } : m.object['spec']['selector'];
      expect({ object: m.object['metadata']['name'], selects: found.some((p) => matches(selector, p.labels)) }).toEqual(
        {
          object: m.object['metadata']['name'],
          selects: true,
        },
      );
    }
    const deployments = all.filter((m) => m.object['kind'] === 'Deployment').map((m) => m.object['metadata']['name']);
    for (const m of all.filter((x) => x.object['kind'] === 'ScaledObject'))
      expect(deployments).toContain(m.object['spec']['scaleTargetRef']['name']);
  });
});
