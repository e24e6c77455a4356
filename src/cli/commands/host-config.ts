/**
 * `<host> config`, the same for every hosting target: render the target's committed files from the
 * route table, or with `--check` only compare them (for CI) and exit 5 on drift.
 */
import { Command, Option } from 'commander';
import { SnapshotError } from '../../core/errors.js';
import type { Io } from '../io.js';

export interface HostConfig<Flags> {
  /** As in `profile-snapshot <command> config`. */
  command: string;
  /** Shown in messages: "Netlify files are up to date". */
  host: string;
  description: string;
  /** Options of this host besides --check and --root. */
  options?: Option[];
  /** Writes (or with check, compares) the files under root; returns those that differed. */
  sync: (root: string, flags: Flags & { check: boolean }) => string[];
}

export function hostConfigCommand<Flags>(io: Io, config: HostConfig<Flags>): Command {
  const command = new Command('config')
    .description(config.description)
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .option('--check', 'write nothing; exit 5 when a file differs from what the table renders', false)
    .addOption(new Option('--root <dir>', 'the folder the files go under (the repository root)').default('.'));
  for (const option of config.options ?? []) command.addOption(option);
  return command.action((flags: Flags & { check: boolean; root: string }) => {
    const stale = config.sync(flags.root, flags);
    if (flags.check && stale.length > 0) {
      throw new SnapshotError('output', `out of date with the route table: ${stale.join(', ')}`, {
        hint: `run profile-snapshot ${config.command} config with the same options and commit the result`,
      });
    }
    io.stderr.write(
      `profile-snapshot: ${stale.length === 0 ? `${config.host} files are up to date` : `${flags.check ? 'differ' : 'wrote'}: ${stale.join(', ')}`}\n`,
    );
  });
}
