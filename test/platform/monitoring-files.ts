// The deploy monitoring files and the series their expressions read, for the tests.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const RULE_FILE = 'deploy/kustomize/components/monitoring/prometheus-rule.yaml';
export const POD_MONITOR_FILE = 'deploy/kustomize/components/monitoring/pod-monitor.yaml';
export const DASHBOARD_FILE = 'deploy/monitoring/grafana-dashboard.json';

export function ruleExpressions(): string[] {
  const rule = parse(readFileSync(RULE_FILE, 'utf8')) as Json;
  return (rule['spec']['groups'] as Json[]).flatMap((g) => (g['rules'] as Json[]).map((r) => String(r['expr'])));
}

export function dashboardExpressions(): string[] {
  const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Json;
  return (dashboard['panels'] as Json[]).flatMap((p) => ((p['targets'] ?? []) as Json[]).map((t) => String(t['expr'])));
}

/** The Tally series an expression reads, histogram suffixes removed (the family name is what /metrics declares). */
export function seriesOf(expr: string): string[] {
  return [...expr.matchAll(/\btally_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|count|sum)$/, ''));
}
