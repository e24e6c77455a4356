/**
 * The small HTTP server behind `--metrics` (watch and serve): `GET|HEAD /metrics` in the Prometheus
 * text format and `GET|HEAD /healthz` as JSON (200 when healthy, 503 when not), read fresh at each
 * request; anything else 404. Its answers are never cached: figures and health are for now.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MetricsSource {
  /** The metrics text and its content type. */
  metrics(): Promise<{ type: string; text: string }>;
  /** The health check's body; `ok` decides 200 or 503. */
  health(): { ok: boolean };
}

export interface MetricsEndpoint {
  address: { host: string; port: number };
  /** Stops the server, ending keep-alive connections (a scraper holds one open between scrapes). */
  close(): Promise<void>;
}

/** Listens on `host:port` (port 0: any free one); a busy port rejects. */
export async function serveMetrics(host: string, port: number, source: MetricsSource): Promise<MetricsEndpoint> {
  const server = createServer((request, response) => void respond(source, request, response));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // A failed accept (EMFILE) must not end the process it reports on: the scraper just retries.
  server.on('error', () => {});
  const address = server.address() as AddressInfo;
  return { address: { host: address.address, port: address.port }, close: () => closeNow(server) };
}

function closeNow(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

async function respond(source: MetricsSource, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const path = (request.url ?? '').split('?')[0];
  const read = request.method === 'GET' || request.method === 'HEAD';
  try {
    if (read && path === '/metrics') {
      const { type, text } = await source.metrics();
      send(response, 200, type, text);
    } else if (read && path === '/healthz') {
      const health = source.health();
      send(response, health.ok ? 200 : 503, 'application/json; charset=utf-8', `${JSON.stringify(health)}\n`);
    } else send(response, 404, 'text/plain; charset=utf-8', 'not found: try /metrics or /healthz\n');
  } catch {
    // A figure that cannot be read is a bug elsewhere; the scraper sees a failed scrape, the process goes on.
    send(response, 500, 'text/plain; charset=utf-8', 'internal error\n');
  }
}

function send(response: ServerResponse, code: number, type: string, body: string): void {
  response.writeHead(code, { 'content-type': type, 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) });
  response.end(body);
}
