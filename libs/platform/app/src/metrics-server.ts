// The metrics port (ADR 0053): Prometheus text on /metrics and the full readiness report on
// /readyz, for the scraper and the operator's tools, on a port of its own that the network
// policy opens to the monitoring namespace only. Money totals over every tenant and the
// servers and streams of the installation are never on the API port.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { JsonLogger } from './json-logger.js';
import { readinessReport, type MetricsRegistry, type ReadinessRegistry } from './health.js';

export interface MetricsServerOptions {
  readonly port: number;
  readonly metrics: MetricsRegistry;
  readonly readiness: ReadinessRegistry;
  readonly logger: JsonLogger;
}

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/** A scrape that has not finished by then is cut: a stuck read must not pile up connections. */
const REQUEST_TIMEOUT_MS = 30_000;

async function answer(o: MetricsServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD' }).end();
    return;
  }
  if (path === '/metrics') {
    const text = await o.metrics.registry.metrics();
    res.writeHead(200, { 'content-type': o.metrics.registry.contentType }).end(req.method === 'HEAD' ? '' : text);
    return;
  }
  if (path === '/readyz') {
    const { code, report } = await readinessReport(o.readiness);
    res.writeHead(code, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(report));
    return;
  }
  if (path === '/healthz') {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end('{"status":"ok"}');
    return;
  }
  res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: /metrics, /readyz, /healthz\n');
}

export async function startMetricsServer(o: MetricsServerOptions): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    answer(o, req, res).catch((error: unknown) => {
      o.logger.event('warn', 'metrics port request failed', { error: String(error) });
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, '0.0.0.0', () => resolve());
  });
  return {
    port: o.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
