/** `profile-snapshot serve`: the origin server for a snapshot, for local preview or behind a CDN. */
import { Command, Option } from 'commander';
import { usageError } from '../../core/errors.js';
import { FILE_CACHE_DEFAULTS } from '../../hosting/file-cache.js';
import { closeGracefully, createOrigin, listen } from '../../hosting/origin.js';
import type { CliState, Io } from '../io.js';
import { parseNumber } from '../numbers.js';
import { outDirOption, outOption } from '../options.js';

export const SERVE_DEFAULTS = { port: 3000, host: '127.0.0.1', cacheMiB: FILE_CACHE_DEFAULTS.maxBytes / 2 ** 20 } as const;

interface ServeFlags {
  out?: string;
  port?: string;
  host?: string;
  cache?: string;
  verbose?: boolean;
}

/** Which signals stop the server; injectable so tests can stop it without signalling the test runner. */
export interface ServeHooks {
  onListening?: (address: { port: number; host: string }) => void;
  stopSignal?: (stop: () => void) => void;
}

export function serveCommand(io: Io, _state: CliState, hooks: ServeHooks = {}): Command {
  return new Command('serve')
    .description(
      'Serve a snapshot exactly as Netlify serves it with the committed netlify.toml: the contract headers, case-insensitive usernames, the query-string form, JSON errors, CORS, ETags. Run it behind any CDN that honours s-maxage and stale-while-revalidate, beside `watch`.',
    )
    .addOption(outOption('the snapshot to serve'))
    .addOption(new Option('--port <port>', `TCP port, 0 for any free one [env: PORT] (default: ${SERVE_DEFAULTS.port})`))
    .addOption(new Option('--host <host>', `address to listen on (default: "${SERVE_DEFAULTS.host}")`))
    .addOption(
      new Option(
        '--cache <MiB>',
        `memory for profiles and error documents, checked against their file on every request; 0 reads every answer from disk (default: ${SERVE_DEFAULTS.cacheMiB})`,
      ),
    )
    .option('--verbose', 'print one access-log line per request on stderr', false)
    .action(async (flags: ServeFlags) => {
      const out = outDirOption(flags, io.env);
      const portText = flags.port ?? io.env.PORT ?? String(SERVE_DEFAULTS.port);
      const port = parseNumber(portText, '--port', { expected: 'a TCP port (0-65535)', max: 65535 });
      const host = flags.host ?? SERVE_DEFAULTS.host;
      const cacheMiB = parseNumber(flags.cache ?? String(SERVE_DEFAULTS.cacheMiB), '--cache', {
        expected: 'a size in MiB (0-65536)',
        max: 65536,
      });
      const { server } = createOrigin({
        out,
        cacheBytes: cacheMiB * 2 ** 20,
        log: flags.verbose ? (line) => io.stderr.write(`${line}\n`) : undefined,
      });
      let address;
      try {
        address = await listen(server, port, host);
      } catch (cause) {
        throw usageError(`cannot listen on ${host}:${portText}`, 'pick another --port or --host', cause);
      }
      const shown = address.host.includes(':') ? `[${address.host}]` : address.host;
      io.stderr.write(`profile-snapshot: serving ${out} on http://${shown}:${address.port} (Ctrl-C to stop)\n`);
      hooks.onListening?.(address);
      await new Promise<void>((resolveStop) => {
        const stop = () => resolveStop();
        if (hooks.stopSignal) {
          hooks.stopSignal(stop);
        } else {
          process.once('SIGTERM', stop);
          process.once('SIGINT', stop);
        }
      });
      io.stderr.write('profile-snapshot: stopping: finishing requests in flight\n');
      await closeGracefully(server);
      io.stderr.write('profile-snapshot: stopped\n');
    });
}
