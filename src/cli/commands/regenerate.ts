/**
 * `profile-snapshot regenerate`: make the watcher of an out dir run a cycle now (after a moderation
 * action, say), wait for that cycle, and print its summary. Exits with the cycle's own exit code (0, or
 * 3/4/5 when it failed), 5 when no watcher runs.
 */
import { Command, Option } from 'commander';
import { SnapshotError, type SnapshotErrorKind } from '../../core/errors.js';
import { formatCycle, formatRole } from '../../watch/format.js';
import { regenerate } from '../../watch/regenerate.js';
import type { CliState, Io } from '../io.js';
import { parseNumber } from '../numbers.js';
import { outDirOption, outOption } from '../options.js';

const KINDS: readonly SnapshotErrorKind[] = ['usage', 'store', 'strictWarnings', 'output'];

interface RegenerateFlags {
  out?: string;
  timeout: string;
  json?: boolean;
  full?: boolean;
}

export function regenerateCommand(io: Io, state: CliState): Command {
  return new Command('regenerate')
    .description('Ask the watcher of an out dir (found through its lock) to rebuild now, wait for that cycle and print its summary.')
    .addOption(outOption("the watcher's output folder"))
    .addOption(new Option('--timeout <seconds>', 'give up (exit 5) if the cycle has not finished by then').default('600'))
    .option('--json', "print the cycle's status as JSON on stdout", false)
    .option(
      '--full',
      'a full cycle, as build --full: read every row, and rewrite every file of the tree that is missing, truncated or altered',
      false,
    )
    .action(async (flags: RegenerateFlags) => {
      state.json = Boolean(flags.json);
      const timeoutSeconds = parseNumber(flags.timeout, '--timeout', { expected: 'a positive whole number of seconds', positive: true });
      const result = await regenerate(outDirOption(flags, io.env), { timeoutMs: timeoutSeconds * 1000, full: Boolean(flags.full) });
      const { cycle } = result;
      if (state.json) io.stdout.write(`${JSON.stringify(cycle, null, 2)}\n`);
      if (!cycle.ok && cycle.error && KINDS.includes(cycle.error.kind as SnapshotErrorKind)) {
        // The cycle's own failure, with its exit code, through the CLI's one exit point.
        throw new SnapshotError(
          cycle.error.kind as SnapshotErrorKind,
          `watcher pid ${result.holder.pid}: cycle ${cycle.number} failed (${result.consecutiveFailures} in a row): ${cycle.error.message}`,
          { hint: cycle.error.hint ?? undefined },
        );
      }
      if (!cycle.ok) throw new Error(`watcher pid ${result.holder.pid}: ${formatCycle(cycle, result.consecutiveFailures)}`);
      io.stderr.write(`profile-snapshot: watcher pid ${result.holder.pid}: ${formatCycle(cycle, result.consecutiveFailures)}\n`);
      if (result.publish) io.stderr.write(`profile-snapshot: watcher pid ${result.holder.pid}: publish: ${formatRole(result.publish)}\n`);
    });
}
