/**
 * `profile-snapshot watch`: keeps the out dir fresh, one cycle every --interval seconds, until
 * SIGINT/SIGTERM (finish the current cycle, exit 0). SIGHUP runs a cycle at once. One log line per
 * cycle on stderr; with --json, also one JSON status line per cycle on stdout.
 */
import { Command, Option } from 'commander';
import { snapshotTime } from '../../core/config.js';
import { seconds } from '../numbers.js';
import { Watcher, type WatchEvent } from '../../watch/loop.js';
import { formatCycle } from '../../watch/format.js';
import type { CliState, Io } from '../io.js';
import { addBuildOptions, OUT_ENV_HELP, resolveBuildOptions, type BuildFlags } from '../options.js';
import { formatWarnings } from '../report.js';
import { addRemoteOptions, REMOTE_ENV_HELP, resolveGuard, resolveRemoteOptions, type RemoteFlags } from '../remote-options.js';
import { describeRemote } from '../../remote/target.js';

interface WatchFlags extends BuildFlags, RemoteFlags {
  interval: string;
  exec?: string;
  execMinInterval: string;
  publish?: string;
}

export function watchCommand(io: Io, state: CliState): Command {
  return addRemoteOptions(
    addBuildOptions(
      new Command('watch').description(
        'Keep the out dir fresh: rebuild from a consistent store snapshot every interval, rewriting only what changed. ' +
          'SIGHUP (or "profile-snapshot regenerate") rebuilds at once; SIGINT/SIGTERM finish the current cycle and exit 0. ' +
          'Health status: <out>/.profile-snapshot/status.json.',
      ),
    )
      .addOption(
        new Option(
          '--interval <seconds>',
          'seconds from the start of one cycle to the start of the next (the s-maxage of the API)',
        ).default('30'),
      )
      .addOption(
        new Option(
          '--exec <command>',
          'shell command run after each cycle that changed files (e.g. a deploy); never twice at once; gets PROFILE_SNAPSHOT_* variables',
        ),
      )
      .addOption(
        new Option(
          '--exec-min-interval <seconds>',
          'at least this long between two starts of --exec (Netlify takes about 3 deploys a minute: use 20)',
        ).default('0'),
      )
      .addOption(
        new Option(
          '--publish <s3-url>',
          'after each cycle that changed files, publish to s3://<bucket>[/<prefix>] as `profile-snapshot publish` does (the options below apply); never twice at once; a failed publish is retried next cycle',
        ),
      ),
  )
    .addHelpText(
      'after',
      `${OUT_ENV_HELP}${REMOTE_ENV_HELP}
The watcher holds the out dir's lock (<out>/.profile-snapshot/lock) while it runs: a build or a
second watcher on the same out dir waits briefly, then exits 5 naming it.
`,
    )
    .action(async (flags: WatchFlags) => {
      state.json = Boolean(flags.json);
      const options = resolveBuildOptions(flags, io);
      const intervalMs = seconds(flags.interval, '--interval', false);
      const execMinIntervalMs = seconds(flags.execMinInterval, '--exec-min-interval', true);
      const log = (line: string) => io.stderr.write(`${new Date().toISOString()} profile-snapshot watch: ${line}\n`);
      const publish = flags.publish === undefined ? undefined : publishOptions(flags.publish, flags, io);

      // Handlers first: a SIGHUP from `regenerate` must never kill a process that holds the lock.
      let watcher: Watcher | undefined;
      const onHup = () => watcher?.regenerate();
      const onStop = () => watcher?.stop();
      process.on('SIGHUP', onHup);
      process.on('SIGINT', onStop);
      process.on('SIGTERM', onStop);
      try {
        watcher = Watcher.start({
          build: options,
          intervalMs,
          snapshotTime: () => snapshotTime(io.env.SOURCE_DATE_EPOCH),
          exec:
            flags.exec === undefined
              ? undefined
              : { command: flags.exec, env: io.env, stdout: io.stdout, stderr: io.stderr, minIntervalMs: execMinIntervalMs },
          publish,
          onEvent: (event) => report(event, io, log, state.json),
        });
        log(
          `watching ${options.db} -> ${watcher.lock.outDir} every ${intervalMs / 1000} s (pid ${process.pid}); ` +
            'SIGHUP or "profile-snapshot regenerate" rebuilds now; SIGINT/SIGTERM stop after the current cycle',
        );
        await watcher.done;
        log('stopped');
      } finally {
        process.off('SIGHUP', onHup);
        process.off('SIGINT', onStop);
        process.off('SIGTERM', onStop);
      }
    });
}

function report(event: WatchEvent, io: Io, log: (line: string) => void, json: boolean): void {
  switch (event.type) {
    case 'cycle': {
      const { cycle, report: buildReport } = event;
      // Warnings repeat every cycle; print them in full only when they change.
      if (buildReport && event.warningsChanged) io.stderr.write(formatWarnings(buildReport.warnings));
      // Notices too: a Netlify folder limit passed, or a watcher that cannot keep its copy of the snapshot.
      if (buildReport && event.noticesChanged) for (const notice of buildReport.notices) log(`warning: ${notice}`);
      const next = `next in ${(event.nextInMs / 1000).toFixed(1)} s`;
      log(`${formatCycle(cycle, event.consecutiveFailures)}; ${next}`);
      if (cycle.error?.stack && event.consecutiveFailures === 1) io.stderr.write(`${cycle.error.stack}\n`);
      if (json) io.stdout.write(`${JSON.stringify({ ...cycle, consecutiveFailures: event.consecutiveFailures })}\n`);
      break;
    }
    case 'exec-start':
      log(
        `exec (cycle ${event.request.cycle}${event.request.changedCycles > 1 ? `, covering ${event.request.changedCycles} changing cycles` : ''}): started`,
      );
      break;
    case 'exec-finish': {
      const { result } = event;
      const outcome =
        result.error !== null
          ? `could not start: ${result.error}`
          : result.exitCode === 0
            ? 'succeeded'
            : result.signal
              ? `killed by ${result.signal}`
              : `FAILED with exit code ${result.exitCode}`;
      const streak = event.consecutiveFailures > 1 ? ` (${event.consecutiveFailures} in a row)` : '';
      log(`exec (cycle ${result.cycle}): ${outcome}${streak}; ${(result.durationMs / 1000).toFixed(2)} s`);
      break;
    }
    case 'publish-finish': {
      const { result } = event;
      const streak = event.consecutiveFailures > 1 ? ` (${event.consecutiveFailures} in a row)` : '';
      const outcome = result.report
        ? `${result.report.objects.put.toLocaleString('en-US')} objects put, ${result.report.objects.deleted.toLocaleString('en-US')} deleted${result.report.retries > 0 ? `, ${result.report.retries} retried` : ''}`
        : `FAILED${streak}: ${result.error?.message ?? 'unknown error'}${result.error?.hint ? `. Fix: ${result.error.hint}` : ''}; retried after the next cycle`;
      log(`publish (cycle ${result.cycle}): ${outcome}; ${(result.durationMs / 1000).toFixed(2)} s`);
      break;
    }
    case 'status-failed':
      log(`cannot write the health status: ${event.message}`);
      break;
    case 'stopping':
      log(
        event.forced
          ? 'second signal: stopping now, ending the --exec command'
          : 'stopping after the current cycle (signal again to stop at once)',
      );
      break;
  }
}

function publishOptions(to: string, flags: WatchFlags, io: Io): NonNullable<Parameters<typeof Watcher.start>[0]['publish']> {
  const remote = resolveRemoteOptions(to, '--publish', flags, io);
  return { to: describeRemote(remote), options: { remote, ...resolveGuard(flags) } };
}
