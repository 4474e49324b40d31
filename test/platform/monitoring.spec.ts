// Proves issue 12 item 4's deploy files are well formed: the PrometheusRule has the shape
// prometheus-operator accepts (no schema package for its CRDs is installed, so the
// structure is checked here: kind, groups, and every rule with an alert name, an
// expression with balanced brackets, a severity and a summary) and covers the alerts an
// SRE needs; the Grafana dashboard is JSON whose panels all query Prometheus; the PodMonitor
// scrapes both services on the port named metrics that their Deployments declare (ADR 0053).
// That every series they name is exported is proven against running services in metrics.e2e.spec.ts.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { renderOverlay } from './kustomize-render.js';
import { dashboardExpressions, DASHBOARD_FILE, POD_MONITOR_FILE, RULE_FILE, seriesOf } from './monitoring-files.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function balanced(expr: string): boolean {
  const open: string[] = [];
  const pairs: Record<string, string> = { ')': '(', ']': '[', '}': '{' };
  for (const c of expr.replace(/"[^"]*"/g, '""')) {
    if ('([{'.includes(c)) open.push(c);
    else if (c in pairs && open.pop() !== pairs[c]) return false;
  }
  return open.length === 0;
}

describe('Issue 12: the PrometheusRule and the Grafana dashboard', () => {
  it('Issue 12: the PrometheusRule is a prometheus-operator rule whose every alert has an expression, a severity and a summary', () => {
    const rule = parse(readFileSync(RULE_FILE, 'utf8')) as Json;
    expect(rule['apiVersion']).toBe('monitoring.coreos.com/v1');
    expect(rule['kind']).toBe('PrometheusRule');
    expect(rule['metadata']['name']).toMatch(/^[a-z0-9-]+$/);
    const rules = (rule['spec']['groups'] as Json[]).flatMap((g) => {
      expect(g['name']).toMatch(/^tally\./);
      return g['rules'] as Json[];
    });
    const names = rules.map((r) => r['alert']);
    expect(new Set(names).size).toBe(names.length);
    for (const r of rules) {
      expect(Object.keys(r).sort()).toEqual(expect.arrayContaining(['alert', 'annotations', 'expr', 'labels']));
      expect(r['alert']).toMatch(/^Tally[A-Za-z]+$/);
      expect(balanced(String(r['expr']))).toBe(true);
      expect(seriesOf(String(r['expr'])).length).toBeGreaterThan(0);
      expect(['warning', 'critical']).toContain(r['labels']['severity']);
      expect(String(r['annotations']['summary']).length).toBeGreaterThan(10);
      if (r['for'] !== undefined) expect(r['for']).toMatch(/^\d+[smh]$/);
    }
    // What an SRE needs: ambiguities older than N, projection lag and quarantine (ADR 0045), dead-letter growth, a budget stream nearly full.
    const byName = new Map(rules.map((r) => [r['alert'] as string, String(r['expr'])]));
    expect(byName.get('TallyAmbiguityUnresolved')).toMatch(/tally_ambiguity_oldest_age_seconds\) > \d+/);
    expect(byName.get('TallyProjectionLagging')).toContain('tally_projection_lag_events');
    expect(byName.get('TallyProjectionQuarantined')).toMatch(/tally_projection_quarantined_aggregates\) > 0/);
    expect(byName.get('TallyDeadLettersGrowing')).toContain('increase(tally_dead_letters_total');
    expect(byName.get('TallyDeadLetterStreamGrowing')).toContain('tally_stream_messages{stream=~".+_DLQ"}');
    // ADR 0043: a charge booked beyond its hold is an alert, per currency.
    expect(byName.get('TallyBudgetOverrun')).toContain('increase(tally_budget_overrun_units_total');
    expect(byName.get('TallyBudgetStreamNearlyFull')).toContain(
      'tally_stream_fullness_ratio{stream=~".+_BUDGET_EVENTS"}',
    );
  });

  it('Issue 12: the Grafana dashboard is JSON with a Prometheus query in every panel', () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Json;
    expect(dashboard['uid']).toBe('tally-overview');
    const panels = (dashboard['panels'] as Json[]).filter((p) => p['type'] !== 'row');
    expect(panels.length).toBeGreaterThanOrEqual(15);
    for (const p of panels) {
      expect(p['datasource']['type']).toBe('prometheus');
      expect((p['targets'] as Json[]).length).toBeGreaterThan(0);
      for (const t of p['targets'] as Json[]) expect(balanced(String(t['expr']))).toBe(true);
    }
    const read = new Set(dashboardExpressions().flatMap(seriesOf));
    for (const series of [
      'tally_admissions_total',
      'tally_admit_duration_seconds',
      'tally_holds_open',
      'tally_exposure_units',
      'tally_committed_cost_units',
      'tally_ambiguities_open',
      'tally_ambiguity_oldest_age_seconds',
      'tally_reconciler_resolutions_total',
      'tally_holds_expired_total',
      'tally_dispatch_attempts_total',
      'tally_provider_latency_seconds',
      'tally_provider_time_to_first_token_seconds',
      'tally_work_queue_pending_messages',
      'tally_work_queue_wait_seconds',
      'tally_projection_lag_events',
      'tally_dead_letters_total',
      'tally_webhook_deliveries_total',
      'tally_webhook_delivery_failures_total',
    ])
      expect(read).toContain(series);
  });

  it('ADR 0053 the PodMonitor scrapes /metrics on the port named metrics, which both services declare, and nothing on the API ports', () => {
    const monitor = parse(readFileSync(POD_MONITOR_FILE, 'utf8')) as Json;
    expect(monitor['apiVersion']).toBe('monitoring.coreos.com/v1');
    expect(monitor['kind']).toBe('PodMonitor');
    expect(monitor['spec']['podMetricsEndpoints']).toEqual([
      expect.objectContaining({ port: 'metrics', path: '/metrics' }),
    ]);
    const names = (monitor['spec']['selector']['matchExpressions'] as Json[]).find(
      (e) => e['key'] === 'app.kubernetes.io/name',
    )!['values'] as string[];
    expect(names.sort()).toEqual(['agent-orchestrator', 'budget-authority']);
    for (const name of names) {
      const deployment = renderOverlay('prod').find(
        (o) => o['kind'] === 'Deployment' && o['metadata']['name'] === name,
      )!;
      const template = deployment['spec']['template'];
      expect(template['metadata']['labels']).toMatchObject(monitor['spec']['selector']['matchLabels']);
      const ports = (template['spec']['containers'] as Json[]).flatMap((c) => c['ports'] as Json[]);
      expect(ports.map((p) => p['name']).sort()).toEqual(['http', 'metrics']);
    }
  });
});
