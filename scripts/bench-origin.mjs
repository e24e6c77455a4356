// The origin server as `serve --workers 1` runs it (createOrigin with serve's default answer cache,
// no access log, no metrics), with its quick path on or off, for bench-serve-hold.mjs: `serve` has
// no option to turn the quick path off, so both are measured through this runner and differ in
// nothing else.
//
//   node scripts/bench-origin.mjs <out dir> [--quick-path on|off]
//
// Listens on a free port of 127.0.0.1 and prints serve's line ("... on http://127.0.0.1:<port>") on
// stderr; exits on SIGTERM or SIGINT.
import { SERVE_DEFAULTS } from '../build/cli/commands/serve.js';
import { createOrigin, listen } from '../build/hosting/serve/origin.js';

const [out, ...args] = process.argv.slice(2);
const mode = args.includes('--quick-path') ? args[args.indexOf('--quick-path') + 1] : 'on';
if (!out || !['on', 'off'].includes(mode)) {
  process.stderr.write('usage: node scripts/bench-origin.mjs <out dir> [--quick-path on|off]\n');
  process.exit(2);
}
const quickPath = mode === 'on';
const { server } = createOrigin({ out, cacheBytes: SERVE_DEFAULTS.cacheMiB * 2 ** 20, quickPath });
// The origin says whether its quick path is on (when it can): a runner measuring the wrong one is worse than none.
if (typeof server.quickPath === 'boolean' && server.quickPath !== quickPath) {
  process.stderr.write(`bench-origin: asked for the quick path ${mode}, but the origin has it ${server.quickPath ? 'on' : 'off'}\n`);
  process.exit(1);
}
const { port } = await listen(server, 0, '127.0.0.1');
process.stderr.write(`profile-snapshot: serving ${out} on http://127.0.0.1:${port} (bench-origin, quick path ${mode})\n`);
for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => process.exit(0));
