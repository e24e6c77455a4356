/**
 * `profile-snapshot cloudflare config`: renders the Cloudflare Worker (cloudflare/worker.js) and its
 * wrangler.toml from the route table; `--check` only compares, for CI.
 */
import { Command, Option } from 'commander';
import { CLOUDFLARE_DEFAULTS, syncCloudflareFiles, type CloudflareOptions } from '../../hosting/hosts/cloudflare-config.js';
import type { CliState, Io } from '../io.js';
import { hostConfigCommand } from './host-config.js';

export function cloudflareCommand(io: Io, _state: CliState): Command {
  const d = CLOUDFLARE_DEFAULTS;
  const command = new Command('cloudflare').description(
    'Cloudflare hosting: a Worker that answers the API from the R2 bucket `publish` fills.',
  );
  command.addCommand(
    hostConfigCommand<Partial<CloudflareOptions>>(io, {
      command: 'cloudflare',
      host: 'Cloudflare',
      description: 'Write cloudflare/worker.js and cloudflare/wrangler.toml from the route table (src/hosting/routes/routes.ts).',
      options: [
        new Option('--name <name>', `Worker name (default: "${d.name}")`),
        new Option('--host <host>', `the API's host name, routed /api/v1/* and /service-api/v1/* (default: "${d.host}")`),
        new Option('--zone <zone>', `the Cloudflare zone the host is in (default: "${d.zone}")`),
        new Option('--bucket <bucket>', `the R2 bucket publish writes to (default: "${d.bucket}")`),
        new Option('--prefix <prefix>', 'the key prefix of publish --to s3://<bucket>/<prefix> (default: none)'),
      ],
      sync: (root, flags) => syncCloudflareFiles(root, flags),
    }),
  );
  return command;
}
