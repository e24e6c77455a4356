/**
 * `profile-snapshot netlify`: the Netlify side of hosting. `config` renders netlify.toml and the edge
 * function's routing module from the route table (`--check` only compares, for CI); `verify` checks a
 * built snapshot against Netlify's deploy limits, as the last step of the Netlify build command.
 */
import { Command } from 'commander';
import { outputError } from '../../core/errors.js';
import { checkNetlifyLimits, NETLIFY_MAX_FILES_PER_DIR, nearLimitMessage } from '../../hosting/hosts/netlify-limits.js';
import { syncNetlifyFiles } from '../../hosting/hosts/netlify-config.js';
import type { CliState, Io } from '../io.js';
import { outDirOption, outOption } from '../options.js';
import { hostConfigCommand } from './host-config.js';
import { count } from '../../core/text.js';

export function netlifyCommand(io: Io, _state: CliState): Command {
  const command = new Command('netlify').description(
    "Netlify hosting: render netlify.toml from the route table, check a snapshot against Netlify's limits.",
  );
  const configure = (c: Command) =>
    c.exitOverride().configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) });

  command.addCommand(
    hostConfigCommand(io, {
      command: 'netlify',
      host: 'Netlify',
      description:
        'Write netlify.toml and netlify/edge-functions/profile-api/routes.js from the route table (src/hosting/routes/routes.ts).',
      sync: (root, flags) => syncNetlifyFiles(root, flags),
    }),
  );

  command.addCommand(
    configure(
      new Command('verify')
        .description(
          `Fail when a folder of the snapshot holds more than Netlify's ${count(NETLIFY_MAX_FILES_PER_DIR)} files (the deploy would fail); warn from 90 %.`,
        )
        .addOption(outOption('the snapshot'))
        .action((flags: { out?: string }) => {
          const out = outDirOption(flags, io.env);
          const report = checkNetlifyLimits(out);
          for (const near of report.near) {
            io.stderr.write(`profile-snapshot: warning: ${nearLimitMessage(near)}\n`);
          }
          if (report.over.length > 0) {
            const list = report.over.map((o) => `${o.dir} (${count(o.entries)})`).join(', ');
            throw outputError(
              `Netlify would reject this deploy: more than ${count(NETLIFY_MAX_FILES_PER_DIR)} files in ${list}`,
              'serve the snapshot with profile-snapshot serve behind a CDN instead (see "Self-host behind a CDN" in docs/hosting.md)',
            );
          }
          io.stderr.write(
            `profile-snapshot: within Netlify's limits (largest folder: ${report.largest?.dir ?? '.'}, ${count(report.largest?.entries ?? 0)} files)\n`,
          );
        }),
    ),
  );
  return command;
}
