/** `profile-snapshot build`: one build, a summary line, optionally the JSON report. */
import { Command } from 'commander';
import { build } from '../../build.js';
import { snapshotTime } from '../../core/config.js';
import type { CliState, Io } from '../io.js';
import { addBuildOptions, OUT_ENV_HELP, buildOptionsFromFlags, type BuildFlags } from '../options.js';
import { formatSummary, formatWarnings, ProgressLine } from '../report.js';
import { count } from '../../core/text.js';

export function buildCommand(io: Io, state: CliState): Command {
  return addBuildOptions(
    new Command('build').description(
      'Write the API from one consistent snapshot of the store into the out dir. Unchanged documents keep their bytes; profiles no longer published are removed; files the tool did not write are never touched.',
    ),
  )
    .addHelpText('after', OUT_ENV_HELP)
    .action((flags: BuildFlags) => {
      state.json = Boolean(flags.json);
      const options = buildOptionsFromFlags(flags, io);
      const time = snapshotTime(io.env.SOURCE_DATE_EPOCH);
      const progress = new ProgressLine(io.stderr);
      let report;
      try {
        report = build(options, {
          snapshotMs: time.ms,
          reproducible: time.reproducible,
          onProgress: (rows) => progress.update(`read ${count(rows)} rows`),
        });
      } finally {
        progress.clear();
      }
      io.stderr.write(formatWarnings(report.warnings));
      for (const notice of report.notices) io.stderr.write(`warning: ${notice}\n`);
      io.stderr.write(`${formatSummary(report)}\n`);
      if (state.json) io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    });
}
