/**
 * `profile-snapshot watch`: keeps the out dir fresh, one cycle every --interval seconds, until
 * SIGINT/SIGTERM (finish the current cycle, exit 0). SIGHUP runs a cycle at once. One log line per
 * cycle on stderr; with --json, also one JSON status line per cycle on stdout.
 */
import { Command, Option } from 'commander';
import { formatSlice } from '../../core/slice.js';
import { snapshotTime } from '../../core/config.js';
import { seconds, wholeNumber } from '../numbers.js';
import { Watcher, type WatchEvent } from '../../watch/loop.js';
import { failureText, formatCycle, formatPublishProgress, formatRole, streak } from '../../watch/format.js';
import type { CliState, Io } from '../io.js';
import { addBuildOptions, OUT_ENV_HELP, buildOptionsFromFlags, type BuildFlags } from '../options.js';
import { formatWarnings, retried } from '../report.js';
import {
  addRemoteOptions,
  REMOTE_ENV_HELP,
  resolveGuard,
  resolveCheckpoints,
  resolveLease,
  resolveRemoteOptions,
  type RemoteFlags,
} from '../remote-options.js';
import { describeRemote } from '../../publish/bucket/target.js';
import { assertShardWriters } from '../../publish/shards/writers.js';
import { count } from '../../core/text.js';
import { usageError } from '../../core/errors.js';
import { WatchMetrics } from '../../watch/metrics.js';
import { guardAgainstStalls } from '../../watch/stall-guard.js';
import { hostPort } from '../../core/text.js';
import { listenAddress, type ListenAddress } from '../address.js';

interface WatchFlags extends BuildFlags, RemoteFlags {
  interval: string;
  exec?: string;
  execMinInterval: string;
  publish?: string;
  metrics?: string;
  healthMaxAge?: string;
  stallTimeout?: string;
}

/**
 * The longest a publishing watcher's main thread may go without progress before it lets its leases
 * go and exits 13 (publish/lease/heartbeat.ts, watch/stall-guard.ts). Far above the longest gap between progress marks of a cold
 * first cycle of a million users on two cores (the figure is in docs/publish.md), so that no healthy
 * build ever reaches it, and short enough that a hung leader is replaced within minutes.
 */
const DEFAULT_STALL_TIMEOUT_S = 300;

/**
 * Test hook: after cycle N, the main thread blocks for good (an Atomics.wait that nothing wakes), as
 * a hung watcher would. The tests of --stall-timeout use it; documented in docs/watch.md.
 */
const TEST_STALL_ENV = 'PROFILE_SNAPSHOT_TEST_STALL_AT_CYCLE';

export function watchCommand(io: Io, state: CliState): Command {
  return defineWatch().action((flags: WatchFlags) => runWatch(flags, io, state));
}

/** The command's flags and help. */
function defineWatch(): Command {
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
          'after each cycle that changed files, publish to s3://<bucket>[/<prefix>] as `profile-snapshot publish` does (the options below apply); never twice at once; each publish sends the tree of the cycle before it, pinned, however many cycles it spans (its progress ends each cycle line); a failed publish is retried next cycle. ' +
            'Several watchers on one prefix: one leads and publishes, the others build and stand by, taking over when it stops (--lease-ttl)',
        ),
      )
      .addOption(
        new Option(
          '--metrics <[host:]port>',
          'serve Prometheus metrics on http://<host>:<port>/metrics and a health check on /healthz (host 127.0.0.1 unless given, e.g. 9464 or 0.0.0.0:9464; port 0: any free one)',
        ),
      )
      .addOption(
        new Option(
          '--health-max-age <seconds>',
          '/healthz answers 503 once the tree (for the publishing leader: the bucket) is older than this (default: 3 x --interval)',
        ),
      )
      .addOption(
        new Option(
          '--stall-timeout <seconds>',
          `with --publish: once the main thread has made no progress (rows read, a cycle ended, a publish moving, its sleep between cycles ticking) for this long, the watcher renews its leases no more (a standby takes over within --lease-ttl), says why on stderr and in status.json, and exits 13 for its supervisor to restart it (default: ${DEFAULT_STALL_TIMEOUT_S}, far above a healthy cycle's longest gap)`,
        ),
      ),
  ).addHelpText(
    'after',
    `${OUT_ENV_HELP}${REMOTE_ENV_HELP}
The watcher holds the out dir's lock (<out>/.profile-snapshot/lock) while it runs: a build or a
second watcher on the same out dir waits briefly, then exits 5 naming it.
`,
  );
}

/** Runs the watcher until SIGINT/SIGTERM. */
async function runWatch(flags: WatchFlags, io: Io, state: CliState): Promise<void> {
  state.json = Boolean(flags.json);
  const options = buildOptionsFromFlags(flags, io);
  const intervalMs = seconds(flags.interval, '--interval', false);
  const execMinIntervalMs = seconds(flags.execMinInterval, '--exec-min-interval', true);
  const log = (line: string) => io.stderr.write(`${new Date().toISOString()} profile-snapshot watch: ${line}\n`);
  const publish = flags.publish === undefined ? undefined : publishOptions(flags.publish, flags, io);
  if (publish !== undefined) assertShardWriters(options.users.count > 1 ? options.users : undefined, publish.options.singleWriter);
  const shard = options.users.count > 1 ? formatSlice(options.users) : undefined;
  const served = metricsOptions(flags, intervalMs, publish !== undefined, shard);
  const stallTimeoutMs = stallTimeout(flags, publish !== undefined, options.busyTimeoutMs ?? 0);
  const stallAt = io.env[TEST_STALL_ENV] === undefined ? undefined : wholeNumber(io.env[TEST_STALL_ENV], TEST_STALL_ENV);

  // Handlers first: a SIGHUP from `regenerate` must never kill a process that holds the lock.
  let watcher: Watcher | undefined;
  const onHup = () => watcher?.regenerate();
  const onStop = () => watcher?.stop();
  process.on('SIGHUP', onHup);
  process.on('SIGINT', onStop);
  process.on('SIGTERM', onStop);
  try {
    // Armed before the first lease is taken; its hook exits the process (13) once the main thread stalls.
    const stall =
      stallTimeoutMs === undefined
        ? undefined
        : {
            timeoutMs: stallTimeoutMs,
            heartbeat: guardAgainstStalls({ timeoutMs: stallTimeoutMs, onStall: (error) => watcher?.stalled(error) }),
          };
    watcher = Watcher.start({
      build: options,
      intervalMs,
      snapshotTime: () => snapshotTime(io.env.SOURCE_DATE_EPOCH),
      exec:
        flags.exec === undefined
          ? undefined
          : { command: flags.exec, env: io.env, stdout: io.stdout, stderr: io.stderr, minIntervalMs: execMinIntervalMs },
      publish,
      stall,
      onEvent: (event) => {
        served?.metrics.observe(event);
        report(event, io, log, state.json);
        if (event.type === 'cycle' && event.cycle.number === stallAt) stallForTests(log);
      },
    });
    log(
      `watching ${options.db} -> ${watcher.lock.outDir} every ${intervalMs / 1000} s (pid ${process.pid}); ` +
        'SIGHUP or "profile-snapshot regenerate" rebuilds now; SIGINT/SIGTERM stop after the current cycle',
    );
    if (served) await serveMetrics(served, watcher, log);
    await watcher.done;
    log('stopped');
  } finally {
    await served?.metrics.close();
    process.off('SIGHUP', onHup);
    process.off('SIGINT', onStop);
    process.off('SIGTERM', onStop);
  }
}

/** --stall-timeout, for a watcher that publishes (it bounds how long a hung one keeps its leases). */
function stallTimeout(flags: WatchFlags, publishes: boolean, busyTimeoutMs: number): number | undefined {
  if (!publishes) {
    if (flags.stallTimeout !== undefined) throw usageError('--stall-timeout bounds the leases of --publish', 'add --publish');
    return undefined;
  }
  const timeoutMs = seconds(flags.stallTimeout ?? String(DEFAULT_STALL_TIMEOUT_S), '--stall-timeout', false);
  // A build waits for a locked store on the main thread, without progress: that wait is no stall.
  if (timeoutMs <= busyTimeoutMs) {
    throw usageError(
      `--stall-timeout (${timeoutMs / 1000} s) must be longer than --busy-timeout (${busyTimeoutMs / 1000} s): a cycle waits that long for a locked store without progress`,
      'raise --stall-timeout or lower --busy-timeout',
    );
  }
  return timeoutMs;
}

/** The test hook's stall: this thread blocks for good, as in a hung build; only the renewal thread runs on. */
function stallForTests(log: (line: string) => void): void {
  log(`${TEST_STALL_ENV}: the main thread blocks now, for good`);
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
}

interface ServedMetrics {
  metrics: WatchMetrics;
  at: ListenAddress;
}

/** --metrics and --health-max-age, checked before the watcher starts: a typo is exit 2, not a watcher without metrics. */
function metricsOptions(flags: WatchFlags, intervalMs: number, publishes: boolean, shard: string | undefined): ServedMetrics | undefined {
  if (flags.metrics === undefined) {
    if (flags.healthMaxAge !== undefined) throw usageError("--health-max-age is the limit of --metrics' /healthz", 'add --metrics');
    return undefined;
  }
  const at = listenAddress(flags.metrics, '--metrics', '127.0.0.1');
  // Three intervals: one late or failed cycle is no outage yet, three in a row are.
  const healthMaxAgeMs = flags.healthMaxAge === undefined ? 3 * intervalMs : seconds(flags.healthMaxAge, '--health-max-age', false);
  return { metrics: new WatchMetrics({ publishes, healthMaxAgeMs, shard }), at };
}

/** Serves --metrics once the watcher holds the lock; if it cannot listen, stops the watcher (releasing the lock) and fails. */
async function serveMetrics({ metrics, at }: ServedMetrics, watcher: Watcher, log: (line: string) => void): Promise<void> {
  try {
    const bound = await metrics.listen(at.host, at.port, () => watcher.status());
    log(`metrics on http://${hostPort(bound)}/metrics`);
  } catch (cause) {
    watcher.stop();
    await watcher.done;
    throw usageError(`--metrics cannot listen on ${hostPort(at)}`, 'pick another port or host for --metrics', cause);
  }
}

function report(event: WatchEvent, io: Io, log: (line: string) => void, json: boolean): void {
  if (event.type === 'cycle') reportCycle(event, io, log, json);
  else log(eventLine(event));
}

type CycleEvent = Extract<WatchEvent, { type: 'cycle' }>;
type ExecFinish = Extract<WatchEvent, { type: 'exec-finish' }>;
type PublishFinish = Extract<WatchEvent, { type: 'publish-finish' }>;

function reportCycle(event: CycleEvent, io: Io, log: (line: string) => void, json: boolean): void {
  const { cycle, report: buildReport } = event;
  // Warnings repeat every cycle; print them in full only when they change.
  if (buildReport && event.warningsChanged) io.stderr.write(formatWarnings(buildReport.warnings));
  // Notices too: a Netlify folder limit passed, or a watcher that cannot keep its copy of the snapshot.
  if (buildReport && event.noticesChanged) for (const notice of buildReport.notices) log(`warning: ${notice}`);
  const next = `next in ${(event.nextInMs / 1000).toFixed(1)} s`;
  const publishing = event.publishing === null ? '' : `; ${formatPublishProgress(event.publishing)}`;
  log(`${formatCycle(cycle, event.consecutiveFailures)}; ${next}${publishing}`);
  if (cycle.error?.stack && event.consecutiveFailures === 1) io.stderr.write(`${cycle.error.stack}\n`);
  if (json) io.stdout.write(`${JSON.stringify({ ...cycle, consecutiveFailures: event.consecutiveFailures })}\n`);
}

/** The one log line of every event but a cycle. */
function eventLine(event: Exclude<WatchEvent, CycleEvent>): string {
  switch (event.type) {
    case 'exec-start': {
      const { cycle, changedCycles } = event.request;
      return `exec (cycle ${cycle}${changedCycles > 1 ? `, covering ${changedCycles} changing cycles` : ''}): started`;
    }
    case 'exec-finish':
      return execLine(event);
    case 'publish-finish':
      return publishLine(event);
    case 'publish-role':
      return `publish: ${formatRole(event.status)}`;
    case 'status-failed':
      return `cannot write the health status: ${event.message}`;
    case 'stopping':
      return event.forced
        ? 'second signal: stopping now, ending the --exec command'
        : 'stopping after the current cycle (signal again to stop at once)';
  }
}

function execLine({ result, consecutiveFailures }: ExecFinish): string {
  const outcome =
    result.error !== null
      ? `could not start: ${result.error}`
      : result.exitCode === 0
        ? 'succeeded'
        : result.signal
          ? `killed by ${result.signal}`
          : `FAILED with exit code ${result.exitCode}`;
  return `exec (cycle ${result.cycle}): ${outcome}${streak(consecutiveFailures)}; ${(result.durationMs / 1000).toFixed(2)} s`;
}

function publishLine({ result, consecutiveFailures }: PublishFinish): string {
  const published = result.report;
  const outcome = published
    ? `${count(published.objects.put)} objects put, ${count(published.objects.deleted)} deleted${retried(published)}`
    : `FAILED${streak(consecutiveFailures)}: ${failureText(result.error)}; retried after the next cycle`;
  return `publish (cycle ${result.cycle}): ${outcome}; ${(result.durationMs / 1000).toFixed(2)} s`;
}

function publishOptions(to: string, flags: WatchFlags, io: Io): NonNullable<Parameters<typeof Watcher.start>[0]['publish']> {
  const remote = resolveRemoteOptions(to, '--publish', flags, io);
  return { to: describeRemote(remote), options: { remote, ...resolveGuard(flags), ...resolveLease(flags), ...resolveCheckpoints(io) } };
}
