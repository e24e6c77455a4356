/** `profile-snapshot serve`: the origin server for a snapshot, for local preview or behind a CDN. */
import cluster from 'node:cluster';
import { availableParallelism } from 'node:os';
import { Command, Option } from 'commander';
import { hostPort } from '../../core/text.js';
import { WORKER_SETUP_ENV, type WorkerSetup } from '../../hosting/serve/messages.js';
import type { ServeOptions } from '../../hosting/serve/process.js';
import { listenAddress } from '../address.js';
import type { CliState, Io } from '../io.js';
import { parseNumber } from '../numbers.js';
import { outDirOption, outOption } from '../options.js';

/**
 * The answer cache is the whole server's: each worker keeps its own share. On a small machine a
 * share holds a large tree whole (about 1.7 KiB a profile), which is where CPU is scarce; on a machine
 * with many cores memory stays bounded all the same.
 */
export const SERVE_DEFAULTS = { port: 3000, host: '127.0.0.1', cacheMiB: 512 } as const;
/** More workers than this is a typo, not a machine. */
const MAX_WORKERS = 256;

interface ServeFlags {
  out?: string;
  port?: string;
  host?: string;
  cache?: string;
  workers?: string;
  metrics?: string;
  verbose?: boolean;
}

export function serveCommand(io: Io, _state: CliState): Command {
  return new Command('serve')
    .description(
      'Serve a snapshot exactly as Netlify serves it with the committed netlify.toml: the contract headers, case-insensitive usernames, the query-string form, JSON errors, CORS, ETags. Run it behind any CDN that honours s-maxage and stale-while-revalidate, beside `watch`. Uses every core: one worker process per core, sharing the port.',
    )
    .addOption(outOption('the snapshot to serve'))
    .addOption(new Option('--port <port>', `TCP port, 0 for any free one [env: PORT] (default: ${SERVE_DEFAULTS.port})`))
    .addOption(new Option('--host <host>', `address to listen on (default: "${SERVE_DEFAULTS.host}")`))
    .addOption(
      new Option(
        '--cache <MiB>',
        `memory for profiles and error documents (about 1.7 KiB a profile), for the whole server, shared out equally among the workers; checked against their file on every request; 0 reads every answer from disk (default: ${SERVE_DEFAULTS.cacheMiB})`,
      ),
    )
    .addOption(
      new Option(
        '--workers <n>',
        `processes answering requests, sharing the port; 1 serves from this process alone [env: PROFILE_SERVE_WORKERS] (default: the cores available, here ${availableParallelism()})`,
      ),
    )
    .option(
      '--metrics <[host:]port>',
      "serve the whole server's Prometheus metrics on http://<host>:<port>/metrics and a health check on /healthz (host 127.0.0.1 unless given; port 0: any free one)",
    )
    .option('--verbose', 'print one access-log line per request on stderr', false)
    .action(async (flags: ServeFlags) => {
      const log = (line: string) => io.stderr.write(`${line}\n`);
      const fromPrimary = io.env[WORKER_SETUP_ENV];
      // Each side loads only its own modules: a worker never loads the primary's metrics.
      if (cluster.isWorker && fromPrimary !== undefined)
        return (await import('../../hosting/serve/worker.js')).runWorker(JSON.parse(fromPrimary) as WorkerSetup, log);
      const options = serveOptions(flags, io.env, log);
      const server = await (await import('../../hosting/serve/process.js')).startServer(options);
      const workers = options.workers === 1 ? '' : ` with ${options.workers} workers`;
      io.stderr.write(`profile-snapshot: serving ${options.setup.out} on http://${hostPort(server.address)}${workers} (Ctrl-C to stop)\n`);
      if (server.metricsAddress) io.stderr.write(`profile-snapshot: metrics on http://${hostPort(server.metricsAddress)}/metrics\n`);
      await new Promise<void>((resolveStop) => {
        process.once('SIGTERM', resolveStop);
        process.once('SIGINT', resolveStop);
      });
      io.stderr.write('profile-snapshot: stopping: finishing requests in flight\n');
      await server.stop();
      io.stderr.write('profile-snapshot: stopped\n');
    });
}

/** The flags checked and resolved before anything starts: a typo is exit 2 (a folder with no snapshot is the origin's to refuse). */
export function serveOptions(flags: ServeFlags, env: Io['env'], log: (line: string) => void): ServeOptions {
  const given = outDirOption(flags, env);
  const port = parseNumber(flags.port ?? env.PORT ?? String(SERVE_DEFAULTS.port), '--port', {
    expected: 'a TCP port (0-65535)',
    max: 65535,
  });
  const cacheMiB = parseNumber(flags.cache ?? String(SERVE_DEFAULTS.cacheMiB), '--cache', {
    expected: 'a size in MiB (0-65536)',
    max: 65536,
  });
  const workersText = flags.workers ?? env.PROFILE_SERVE_WORKERS ?? String(availableParallelism());
  const workers = parseNumber(workersText, '--workers', {
    expected: `a number of processes (1-${MAX_WORKERS})`,
    positive: true,
    max: MAX_WORKERS,
  });
  const metrics = flags.metrics === undefined ? undefined : listenAddress(flags.metrics, '--metrics', '127.0.0.1');
  const setup: WorkerSetup = {
    ...{ out: given, port, host: flags.host ?? SERVE_DEFAULTS.host, cacheBytes: Math.floor((cacheMiB * 2 ** 20) / workers) },
    ...{ verbose: Boolean(flags.verbose), tally: metrics !== undefined },
  };
  return { setup, workers, metrics, log };
}
