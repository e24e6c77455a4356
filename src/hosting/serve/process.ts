/**
 * The `serve` command's server, one process or several: with one worker, the origin server in this
 * process (what `serve` always was); with more, a cluster of workers (./cluster.ts). Either
 * way, --metrics serves the whole server's figures and health, and stop() drains every request in
 * flight.
 */
import { usageError } from '../../core/errors.js';
import { serveMetrics, type MetricsEndpoint } from '../../core/metrics-endpoint.js';
import { hostPort } from '../../core/text.js';
import { closeGracefully, listenOrRefuse } from './origin.js';
import { ServeCluster } from './cluster.js';
import { ServeMetrics } from './metrics.js';
import type { WorkerSetup } from './messages.js';
import { originFor } from './worker.js';

type Address = { host: string; port: number };

export interface ServeOptions {
  setup: WorkerSetup;
  workers: number;
  /** Where /metrics and /healthz listen; undefined: nowhere. */
  metrics?: Address | undefined;
  /** One line to stderr: a worker replaced, an access-log line. */
  log: (line: string) => void;
}

export interface RunningServer {
  address: Address;
  metricsAddress: Address | undefined;
  /** Drains: requests in flight finish, then every process of the server ends. */
  stop(): Promise<void>;
}

/** A server whose processes answer; `metrics` sums their figures. */
interface Serving {
  address: Address;
  metrics: ServeMetrics;
  /** Figures brought up to date before a scrape (a single process counts in place). */
  refresh?: () => void;
  stop(): Promise<void>;
}

export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const serving = options.workers === 1 ? await startSingle(options) : await startCluster(options);
  let endpoint: MetricsEndpoint | undefined;
  if (options.metrics) {
    const { host, port } = options.metrics;
    try {
      endpoint = await serveMetrics(host, port, {
        metrics: () => {
          serving.refresh?.();
          return serving.metrics.text();
        },
        health: () => serving.metrics.health(),
      });
    } catch (cause) {
      await serving.stop();
      throw usageError(`--metrics cannot listen on ${hostPort({ host, port })}`, 'pick another port or host for --metrics', cause);
    }
  }
  return {
    address: serving.address,
    metricsAddress: endpoint?.address,
    stop: async () => {
      serving.metrics.stop();
      await serving.stop();
      await endpoint?.close();
    },
  };
}

async function startCluster(options: ServeOptions): Promise<Serving> {
  const cluster = new ServeCluster(options);
  await cluster.start();
  return {
    address: cluster.address!,
    metrics: cluster.metrics,
    stop: () => cluster.stop(),
  };
}

async function startSingle({ setup, log }: ServeOptions): Promise<Serving> {
  const { server, totals } = originFor(setup, log);
  const address = await listenOrRefuse(server, setup.port, setup.host);
  const metrics = new ServeMetrics(1, () => 1);
  return {
    address,
    metrics,
    refresh: () => metrics.report(0, process.pid, totals),
    stop: () => closeGracefully(server),
  };
}
