import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metrics } from './metrics.js';

export interface MetricsListener {
  /** http://host:port/metrics, as bound (the port chosen when METRICS_PORT is 0). */
  readonly url: string;
  readonly port: number;
  /** Stops listening and closes every connection (Prometheus keeps its connection open between scrapes). */
  close(): Promise<void>;
}

/** A metrics answer is never stored by a proxy nor read as anything but text. */
const HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };

function plain(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...HEADERS, ...headers, 'content-type': 'text/plain; charset=utf-8' }).end(`${text}\n`);
}

/**
 * The metrics listener: a plain node:http server of its own on METRICS_HOST:METRICS_PORT, apart from the
 * API's Fastify instance, so that metrics are never on the public port and a scrape passes none of the
 * API's hooks (nor counts as one of its requests). It answers GET (and HEAD) /metrics and nothing else.
 * `listen` rejects as the API's listen does (EADDRINUSE…), for server.ts to report.
 */
export async function listenMetrics(metrics: Metrics, host: string, port: number): Promise<MetricsListener> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics') return plain(res, 404, 'Not found: metrics are at /metrics');
    if (req.method !== 'GET' && req.method !== 'HEAD') return plain(res, 405, 'Method not allowed', { allow: 'GET, HEAD' });
    metrics.scrape().then(
      (text) => {
        res.writeHead(200, { ...HEADERS, 'content-type': metrics.contentType });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      // prom-client failing is a bug of ours; the store's failures are answered as plantstore_store_up 0.
      () => plain(res, 500, 'Internal error while collecting metrics'),
    );
  });
  // A scraper that stops mid-request must not hold a socket forever.
  server.requestTimeout = 10_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${bound}/metrics`,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
