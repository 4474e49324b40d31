// Proves issue 12 item 5 against a running stack (the budget-authority, a metered
// orchestrator and a scripted provider over HTTP), both services exporting to an OTLP/HTTP
// receiver in this test process: one trace runs from the HTTP request that submits a unit
// through the work queue, the Admit and Settle commands on the authority, the provider
// call and the projections; every message the unit wrote to NATS carries its traceparent;
// the provider request carries it; JSON log lines inside it carry its trace_id.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jetstreamManager } from '@nats-io/jetstream';
import { tallyNames } from '@tally/contracts';
import { connectNats } from '@tally/platform-jetstream';
import { sharedNatsUrl } from '@tally/testing';
import { issueCapability, meteredHarness } from '../gateway/gateway.support.js';
import { workBody, type OrchestratorHarness } from '../orchestrator/orchestrator.harness.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly attributes: Record<string, unknown>;
}

/** An OTLP/HTTP receiver (JSON encoding, as the exporter sends it): keeps every span it is sent. */
class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  private server: Server | undefined;
  posts = 0;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.posts++;
        if (req.url === '/v1/traces') this.take(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1/traces`;
  }

  private take(body: Json): void {
    for (const rs of body['resourceSpans'] ?? []) {
      const service = (rs['resource']?.['attributes'] ?? []).find((a: Json) => a['key'] === 'service.name')?.[
        'value'
      ]?.['stringValue'];
      for (const ss of rs['scopeSpans'] ?? [])
        for (const s of ss['spans'] ?? [])
          this.spans.push({
            service,
            traceId: s['traceId'],
            spanId: s['spanId'],
            parentSpanId: s['parentSpanId'] ?? '',
            name: s['name'],
            attributes: Object.fromEntries(
              (s['attributes'] ?? []).map((a: Json) => [a['key'], Object.values(a['value'] ?? {})[0]]),
            ),
          });
    }
  }

  stop(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

const receiver = new OtlpReceiver();
let h: OrchestratorHarness;

beforeAll(async () => {
  const endpoint = await receiver.start();
  const tracing = { TALLY__TRACING__OTLP_ENDPOINT: endpoint, TALLY__TRACING__EXPORT_DELAY_MS: '200' };
  h = meteredHarness('tracing', { ...tracing, LOG_LEVEL: 'debug' });
  await h.startAuthority(tracing);
  await h.start(1);
}, 240_000);
afterAll(async () => {
  await h?.dispose();
  await receiver.stop();
}, 60_000);

/** Every span of the trace, once each expected name has arrived. */
async function traceOf(traceId: string, names: readonly string[]): Promise<ReceivedSpan[]> {
  return h.eventually(`spans ${names.join(', ')} of trace ${traceId}`, async () => {
    const spans = receiver.spans.filter((s) => s.traceId === traceId);
    return names.every((n) => spans.some((s) => s.name === n)) ? spans : undefined;
  });
}

/** The names from a span up to the root of its trace. */
function ancestry(spans: readonly ReceivedSpan[], span: ReceivedSpan): string[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const names: string[] = [];
  for (let s: ReceivedSpan | undefined = span; s && names.length < 50; s = byId.get(s.parentSpanId))
    names.push(`${s.service}:${s.name}`);
  return names;
}

describe('Issue 12: traces', () => {
  it('Issue 12: one trace runs from the HTTP request through the work queue, Admit and Settle, the provider call and the projections; NATS headers carry traceparent; logs carry trace_id', async () => {
    const cap = await issueCapability(h, [
      { server_id: 'scripted', tool_name: 'ok-model', max_total_cost_units: 100_000 },
    ]);
    h.provider().script('ok-model', [
      { kind: 'stream', chunks: ['traced'], usage: { input_tokens: 2, output_tokens: 1 } },
    ]);
    // The caller's own trace: the request continues it, so every span below has this trace id.
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const body = workBody({ token: cap.token, route: [{ provider: 'scripted', model: 'ok-model' }] });
    const res = await fetch(`${h.url}/v1/work`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${callerSpan}-01` },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(202);
    const workId = body['work_id'] as string;
    expect(await h.terminal(workId)).toMatchObject({ status: 'completed', output: 'traced' });

    const spans = await traceOf(traceId, [
      'POST /v1/work',
      'work dispatch',
      'command budget.admit',
      'provider call',
      'command budget.settle',
      'projection orchestrator-work-units',
      'projection budget-ledger',
    ]);
    const one = (service: string, name: string) => {
      const found = spans.filter((s) => s.service === service && s.name === name);
      expect({ service, name, count: found.length > 0 }).toEqual({ service, name, count: true });
      return found[0]!;
    };
    const http = one('agent-orchestrator', 'POST /v1/work');
    expect(http.parentSpanId).toBe(callerSpan);
    expect(http.attributes['http.route']).toBe('/v1/work');
    const provider = one('agent-orchestrator', 'provider call');
    expect(provider.attributes).toMatchObject({ 'tally.provider': 'scripted', 'tally.settlement': 'ok' });
    expect(ancestry(spans, provider)).toEqual([
      'agent-orchestrator:provider call',
      'agent-orchestrator:work dispatch',
      'agent-orchestrator:POST /v1/work',
    ]);
    for (const command of ['command budget.admit', 'command budget.settle'])
      expect(ancestry(spans, one('budget-authority', command)).slice(-2)).toEqual([
        'agent-orchestrator:work dispatch',
        'agent-orchestrator:POST /v1/work',
      ]);
    // The authority's projection of the Admit's commit continues the command's span.
    const budgetProjections = spans.filter((s) => s.name === 'projection budget-ledger');
    expect(budgetProjections.some((s) => ancestry(spans, s).includes('budget-authority:command budget.admit'))).toBe(
      true,
    );
    expect(ancestry(spans, one('agent-orchestrator', 'projection orchestrator-work-units')).at(-1)).toBe(
      'agent-orchestrator:POST /v1/work',
    );

    // The provider request carried the trace (from the provider call span).
    const providerRequest = h.provider().requests.find((r) => String(r.headers['traceparent'] ?? '').includes(traceId));
    expect(providerRequest?.headers['traceparent']).toBe(`00-${traceId}-${provider.spanId}-01`);

    // Every event the unit appended carries the trace; so does every budget commit of its admissions.
    const names = tallyNames(h.namespace);
    const nc = await connectNats({
      url: sharedNatsUrl(),
      name: 'tracing-test',
      connectTimeoutMs: 5_000,
      maxReconnectAttempts: 0,
      reconnectTimeWaitMs: 100,
    });
    try {
      const jsm = await jetstreamManager(nc);
      const traceparents = async (stream: string, subject: string) => {
        const info = await jsm.streams.info(stream, { subjects_filter: subject });
        const out: string[] = [];
        for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
          const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
          if (m && m.subject === subject) out.push(m.header?.get('traceparent') ?? '');
        }
        return out;
      };
      const workEvents = await traceparents(names.workEventsStream, names.workEventSubject(workId));
      expect(workEvents.length).toBeGreaterThanOrEqual(4);
      for (const tp of workEvents) expect(tp).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
      const budgetCommits = await traceparents(names.budgetEventsStream, names.budgetEventSubject(cap.id));
      // The first commit is the capability's issue (another request, another trace); the rest are this unit's.
      expect(budgetCommits.length).toBeGreaterThanOrEqual(3);
      expect(budgetCommits[0]).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      expect(budgetCommits[0]).not.toContain(traceId);
      for (const tp of budgetCommits.slice(1)) expect(tp).toContain(traceId);
    } finally {
      await nc.close();
    }

    // JSON log lines written inside the trace carry its id.
    const orchestratorLogs = h.processes[0]!.logs()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Json);
    const inTrace = orchestratorLogs.filter((l) => l['trace_id'] === traceId);
    expect(inTrace.length).toBeGreaterThan(0);
    expect(inTrace.every((l) => typeof l['span_id'] === 'string' && l['span_id'].length === 16)).toBe(true);
  }, 180_000);
});
