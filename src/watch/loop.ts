/**
 * The watch loop: a cycle every interval, each one a full `build` (one consistent store snapshot,
 * only changed files rewritten, atomic renames) under the out dir's lock, which the watcher holds for
 * its whole life. Cycles never overlap: the build is synchronous and the next cycle is scheduled only
 * after one ends (a cycle longer than the interval delays the next; ticks never stack up).
 *
 * A failing cycle (store locked or missing, schema drift, disk full, even a bug) is recorded and
 * reported, the tree keeps its last good state (the build's output transaction guarantees it), and the
 * next tick tries again: nothing a cycle throws ends the watcher.
 *
 * The library never touches signals or streams: the CLI wires SIGHUP to `regenerate()` and
 * SIGINT/SIGTERM to `stop()`, and prints the events.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { FULL_CYCLE_REQUEST_FILE } from '../core/layout.js';
import { build, type BuildReport } from '../build.js';
import { resolveBuildOptions, type BuildOptions, type ResolvedBuildOptions } from '../build-options.js';
import { fingerprint } from '../core/hash.js';
import { keepLargeBuffersApart } from '../core/memory.js';
import { OutDirLock } from '../output/lock.js';
import { StoreSession } from '../incremental/session.js';
import { ExecRunner, type ExecRequest, type ExecResult } from './exec.js';
import { PublishRunner, type PublishResult } from './publisher.js';
import type { PublishOptions } from '../publish/report.js';
import type { Heartbeat } from '../publish/lease/heartbeat.js';
import { reportOf, type ErrorReport, type SnapshotError } from '../core/errors.js';
import { formatCycle } from './format.js';
import { writeStatus, type CycleStatus, type PublishProgressStatus, type PublishStatus, type WatchStatus } from './status.js';

export interface WatchOptions {
  /** Every cycle's build options (resolved once, at start); each cycle takes its own snapshot time. */
  build: BuildOptions | ResolvedBuildOptions;
  intervalMs: number;
  /** The snapshot time of a cycle: the wall clock, or SOURCE_DATE_EPOCH. */
  snapshotTime: () => { ms: number; reproducible: boolean };
  exec?: { command: string; env: NodeJS.ProcessEnv; stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream; minIntervalMs?: number };
  /** `--publish`: the bucket to publish to after each changing cycle (`to` as shown: no credentials). */
  publish?: { to: string; options: Omit<PublishOptions, 'out' | 'onProgress' | 'dryRun' | 'full' | 'waitMs'> };
  /**
   * `--stall-timeout`: the main thread's heartbeat (publish/lease/heartbeat.ts, watch/stall-guard.ts), beaten at every sign of
   * progress; the process's leases are renewed only while it beats.
   */
  stall?: { heartbeat: Heartbeat; timeoutMs: number };
  onEvent: (event: WatchEvent) => void;
}

export type WatchEvent =
  | {
      type: 'cycle';
      cycle: CycleStatus;
      report: BuildReport | undefined;
      consecutiveFailures: number;
      /** The build's warnings differ from the previous successful cycle's (print them again). */
      warningsChanged: boolean;
      /** The build's notices (advice about the whole tree or the watcher) differ from the previous successful cycle's. */
      noticesChanged: boolean;
      nextInMs: number;
      /** `--publish`: the publish under way when the cycle ended (it publishes an earlier cycle's tree). */
      publishing: PublishProgressStatus | null;
    }
  | { type: 'exec-start'; request: ExecRequest }
  | { type: 'exec-finish'; result: ExecResult; consecutiveFailures: number }
  | { type: 'publish-finish'; result: PublishResult; consecutiveFailures: number }
  /** `--publish`: this watcher became the prefix's leader, or a standby (another watcher leads). */
  | { type: 'publish-role'; status: Pick<PublishStatus, 'role' | 'leader' | 'leaseAgeSeconds'> }
  | { type: 'status-failed'; message: string }
  | { type: 'stopping'; forced: boolean };

export class Watcher {
  /** Resolves once the watcher has stopped (lock released, final status written). */
  readonly done: Promise<void>;
  readonly lock: OutDirLock;
  private readonly options: WatchOptions;
  private readonly buildOptions: ResolvedBuildOptions;
  /**
   * The store connection every cycle reads through, with its copy of the last cycle's snapshot: a
   * cycle reads only the users whose rows changed since (see incremental/session.ts).
   */
  private readonly session: StoreSession;
  private readonly exec: ExecRunner | undefined;
  private readonly publisher: PublishRunner | undefined;
  private readonly startedAt = new Date().toISOString();
  private cycles = 0;
  private consecutiveFailures = 0;
  private lastSuccessAt: string | null = null;
  private lastFailureAt: string | null = null;
  private lastCycle: CycleStatus | null = null;
  private lastSuccess: CycleStatus | null = null;
  private nextCycleAt: string | null = null;
  private state: WatchStatus['state'] = 'idle';
  private warningsSignature: string | undefined;
  private noticesSignature: string | undefined;
  private stopping = false;
  private forced = false;
  private regenerateRequested = false;
  private wake: (() => void) | undefined;
  private statusFailing = false;
  private statusSavedMs = 0;
  /** Why the main thread stalled, once it has (the process is exiting). */
  private stallError: ErrorReport | null = null;

  /**
   * Takes the out dir's lock (waiting briefly for another holder, then exit 5 naming it) and starts
   * the first cycle at once.
   */
  static start(options: WatchOptions): Watcher {
    const buildOptions = resolveBuildOptions(options.build);
    const lock = OutDirLock.acquire(buildOptions.outDir, { command: 'watch', waitMs: buildOptions.lockWaitMs });
    keepLargeBuffersApart();
    return new Watcher(options, buildOptions, lock);
  }

  private constructor(options: WatchOptions, buildOptions: ResolvedBuildOptions, lock: OutDirLock) {
    this.options = options;
    this.buildOptions = buildOptions;
    this.lock = lock;
    this.session = new StoreSession(buildOptions.db, { busyTimeoutMs: buildOptions.busyTimeoutMs });
    if (options.exec) {
      const { command, env, stdout, stderr, minIntervalMs } = options.exec;
      this.exec = new ExecRunner(
        command,
        env,
        (request) => formatCycle(cycleOf(request.report, request.cycle)),
        {
          stdout,
          stderr,
          onStart: (request) => {
            options.onEvent({ type: 'exec-start', request });
            this.saveStatus();
          },
          // The status first: whoever reads the log line may read the status file next.
          onFinish: (result) => {
            this.saveStatus();
            options.onEvent({ type: 'exec-finish', result, consecutiveFailures: this.exec?.consecutiveFailures ?? 0 });
          },
        },
        minIntervalMs,
      );
    }
    if (options.publish) {
      // waitMs 0: this process is the writer, and it pins a generation between two (synchronous) builds.
      // A shard's watcher publishes its shard, and stands by or leads among that shard's watchers only.
      const shard = buildOptions.users.count > 1 ? buildOptions.users : undefined;
      this.publisher = new PublishRunner({ ...options.publish.options, out: lock.outDir, waitMs: 0, shard }, options.publish.to, {
        onStart: () => this.saveStatus(),
        // Its progress arrives as messages: handling them is this thread's progress too.
        onProgress: () => {
          this.beat();
          this.saveStatusEvery(PROGRESS_STATUS_MS);
        },
        onFinish: (result) => {
          this.saveStatus();
          options.onEvent({ type: 'publish-finish', result, consecutiveFailures: this.publisher?.snapshot().consecutiveFailures ?? 0 });
        },
        onRole: (status) => {
          this.saveStatus();
          options.onEvent({ type: 'publish-role', status });
        },
      });
    }
    this.done = this.run();
  }

  /** SIGHUP: run a cycle now (after the current one, if one is running). */
  regenerate(): void {
    this.regenerateRequested = true;
    this.wake?.();
  }

  /**
   * SIGINT/SIGTERM: finish the current cycle (and a running --exec), then stop. A second call is a
   * forced stop: the --exec command's process group is ended instead of awaited.
   */
  stop(): void {
    if (this.stopping) {
      if (!this.forced) {
        this.forced = true;
        this.options.onEvent({ type: 'stopping', forced: true });
        this.exec?.kill();
      }
      return;
    }
    this.stopping = true;
    this.options.onEvent({ type: 'stopping', forced: false });
    this.wake?.();
  }

  private async run(): Promise<void> {
    try {
      // Let the caller attach to `done` and its handlers before the first (synchronous) cycle.
      await tick();
      // Bounded by FIRST_LOOK_MS: waiting for the bucket is no stall.
      await this.beatingWhile(this.publisher?.firstLook(FIRST_LOOK_MS) ?? Promise.resolve());
      while (!this.stopping) {
        // A publish reading the tree and the bucket's record is let finish that first (bounded).
        await this.beatingWhile(this.publisher?.pastItsReads(PUBLISH_READS_WAIT_MS) ?? Promise.resolve());
        if (this.stopping) break;
        const started = performance.now();
        this.regenerateRequested = false;
        this.cycle(started);
        // The build blocked the event loop; signals that arrived meanwhile are handled here.
        await tick();
        if (this.stopping) break;
        if (this.regenerateRequested) continue;
        await this.sleep(started + this.options.intervalMs - performance.now());
      }
      // A deploy or publish already under way (or asked for by the last cycle) is part of finishing the work.
      // The deploy is a process of its own, bounded by the operator (a second signal ends it): waiting is no stall.
      if (this.exec && !this.forced) await this.beatingWhile(this.exec.idle());
      if (this.publisher && !this.forced) await this.publisher.finish();
      // The lead is handed over at once (a forced stop does not wait for the bucket: the lease expires).
      if (!this.forced) await this.publisher?.close();
    } finally {
      this.state = 'stopped';
      this.nextCycleAt = null;
      this.saveStatus();
      this.session.close();
      this.lock.release();
    }
  }

  /**
   * The main thread stalled (publish/lease/heartbeat.ts: called on it as the process exits 13): the status
   * file says why. The reason is on stderr already.
   */
  stalled(error: SnapshotError): void {
    this.stallError = reportOf(error);
    this.state = 'stopped';
    this.nextCycleAt = null;
    this.saveStatus();
  }

  /** The main thread made progress. */
  private beat(): void {
    this.options.stall?.heartbeat.beat();
  }

  /** Beats while `waiting` is pending: this thread is idle, as it should be, not stuck. */
  private async beatingWhile<T>(waiting: Promise<T>): Promise<T> {
    const timer = setInterval(() => this.beat(), IDLE_BEAT_MS);
    try {
      return await waiting;
    } finally {
      clearInterval(timer);
    }
  }

  private cycle(startedMs: number): void {
    const number = ++this.cycles;
    this.options.stall?.heartbeat.cycleAt(number, true);
    const timing = { startedAt: new Date().toISOString(), startedMonoNs: process.hrtime.bigint().toString() };
    this.state = 'running';
    this.saveStatus();

    const { report, failure } = this.buildOnce();
    const finished = { ...timing, finishedAt: new Date().toISOString(), durationMs: Math.round(performance.now() - startedMs) };
    const cycle: CycleStatus = report ? { ...cycleOf(report, number), ...finished } : failedCycle(number, finished, failure);
    const { warningsChanged, noticesChanged } = this.record(cycle, report);
    this.options.stall?.heartbeat.cycleAt(number, false);
    this.state = 'idle';
    const nextInMs = Math.max(0, startedMs + this.options.intervalMs - performance.now());
    this.nextCycleAt = new Date(Date.now() + nextInMs).toISOString();
    this.saveStatus();
    this.options.onEvent({
      type: 'cycle',
      cycle,
      report,
      consecutiveFailures: this.consecutiveFailures,
      warningsChanged,
      noticesChanged,
      nextInMs,
      publishing: this.publisher?.snapshot().progress ?? null,
    });
    if (report && cycle.changed) this.exec?.request(number, report);
    if (report) this.publisher?.afterCycle(number, cycle.changed);
  }

  /** One build at the snapshot time; a failure is returned, not thrown: the loop goes on. */
  private buildOnce(): { report?: BuildReport; failure?: unknown } {
    try {
      // Someone may have removed the lock (or the whole out dir) since the last cycle: retake it, or
      // skip this cycle if another live process holds it now.
      this.lock.verify();
      const time = this.options.snapshotTime();
      // `regenerate --full`: this cycle reads every row and heals the tree; asked again until one succeeds.
      const fullRequest = join(this.lock.outDir, FULL_CYCLE_REQUEST_FILE);
      const full = existsSync(fullRequest);
      const report = build(this.buildOptions, {
        fullPass: full || undefined,
        snapshotMs: time.ms,
        reproducible: time.reproducible,
        lock: this.lock,
        session: this.session,
        // Every 10,000 rows read: the build's progress, which keeps the leases renewed (publish/lease/heartbeat.ts, watch/stall-guard.ts).
        onProgress: () => this.beat(),
      });
      if (full) rmSync(fullRequest, { force: true });
      return { report };
    } catch (failure) {
      return { failure };
    }
  }

  /** Counts the cycle into the loop's record; says whether its warnings or notices differ from the last success's. */
  private record(cycle: CycleStatus, report: BuildReport | undefined): { warningsChanged: boolean; noticesChanged: boolean } {
    this.lastCycle = cycle;
    if (!report) {
      this.consecutiveFailures++;
      this.lastFailureAt = cycle.finishedAt;
      return { warningsChanged: false, noticesChanged: false };
    }
    this.consecutiveFailures = 0;
    this.lastSuccessAt = cycle.finishedAt;
    this.lastSuccess = cycle;
    const signature = fingerprint(report.warnings.map((w) => `${w.id}\t${w.reason}`).join('\n'));
    const warningsChanged = signature !== this.warningsSignature;
    this.warningsSignature = signature;
    const notices = report.notices.join('\n');
    const noticesChanged = notices !== this.noticesSignature;
    this.noticesSignature = notices;
    return { warningsChanged, noticesChanged };
  }

  private sleep(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return this.beatingWhile(
      new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.wake = undefined;
          resolve();
        };
        const timer = setTimeout(done, ms);
        this.wake = done;
      }),
    );
  }

  /** Writes the health status unless it was written less than `ms` ago (a long publish's progress). */
  private saveStatusEvery(ms: number): void {
    if (performance.now() - this.statusSavedMs >= ms) this.saveStatus();
  }

  /** Writes the health status; a failure (disk full) is reported once per streak, never fatal. */
  private saveStatus(): void {
    this.statusSavedMs = performance.now();
    const status = this.status();
    try {
      writeStatus(this.lock.outDir, status);
      this.statusFailing = false;
    } catch (error) {
      if (!this.statusFailing) this.options.onEvent({ type: 'status-failed', message: reportOf(error).message });
      this.statusFailing = true;
    }
  }

  /** The health status as status.json has it (and metrics read it). */
  status(): WatchStatus {
    const exec = this.exec;
    return {
      version: 1,
      pid: process.pid,
      out: this.lock.outDir,
      db: this.buildOptions.db,
      intervalSeconds: this.options.intervalMs / 1000,
      startedAt: this.startedAt,
      state: this.state,
      updatedAt: new Date().toISOString(),
      cycles: this.cycles,
      consecutiveFailures: this.consecutiveFailures,
      lastSuccessAt: this.lastSuccessAt,
      lastFailureAt: this.lastFailureAt,
      lastCycle: this.lastCycle,
      lastSuccess: this.lastSuccess,
      nextCycleAt: this.state === 'idle' ? this.nextCycleAt : null,
      exec: exec
        ? {
            command: exec.command,
            running: exec.running,
            runs: exec.runs,
            consecutiveFailures: exec.consecutiveFailures,
            lastExitCode: exec.lastExitCode,
            lastFinishedAt: exec.lastFinishedAt,
          }
        : null,
      publish: this.publisher?.snapshot() ?? null,
      stall: this.options.stall
        ? {
            timeoutSeconds: this.options.stall.timeoutMs / 1000,
            secondsSinceProgress: Math.round(this.options.stall.heartbeat.sinceMs / 100) / 10,
            error: this.stallError,
          }
        : null,
    };
  }
}

/** The counts of a successful cycle (timing fields are filled in by the caller). */
function cycleOf(report: BuildReport, number: number): CycleStatus {
  return {
    number,
    startedAt: '',
    startedMonoNs: '0',
    finishedAt: '',
    durationMs: Math.round(report.seconds * 1000),
    ok: true,
    changed: report.files.written + report.files.removed > 0,
    profiles: report.profiles,
    creators: report.creators,
    skipped: report.skipped,
    rendered: report.rendered,
    rowsRead: report.rowsRead,
    warnings: report.warnings.length,
    files: report.files,
    repaired: report.repaired,
    changes: report.changes,
    snapshotTime: report.snapshotTime,
    error: null,
  };
}

/** How long a publishing watcher's first build waits for its first look at the leadership lease. */
const FIRST_LOOK_MS = 5_000;
/**
 * How long a cycle waits at most for a publish to be past its reads: about a second at a million
 * profiles from a bucket nearby; a far or slow bucket's reads are not waited for to the end.
 */
const PUBLISH_READS_WAIT_MS = 5_000;
/** How often a publish's progress is written to the status file between cycles. */
const PROGRESS_STATUS_MS = 2_000;
/** How often the main thread beats while it waits as it should (its sleep between cycles): a timer that fires is progress. */
const IDLE_BEAT_MS = 1_000;

/** One turn of the event loop (through its poll phase, where pending signals are delivered). */
function tick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The status of a cycle whose build failed: its timing and the error, no figures. */
function failedCycle(
  number: number,
  timing: Pick<CycleStatus, 'startedAt' | 'startedMonoNs' | 'finishedAt' | 'durationMs'>,
  failure: unknown,
): CycleStatus {
  return {
    number,
    ...timing,
    ok: false,
    changed: false,
    profiles: null,
    creators: null,
    skipped: null,
    rendered: null,
    rowsRead: null,
    warnings: null,
    files: null,
    snapshotTime: null,
    // The log line stays one line; a bug's stack goes to the status file (printed once per streak).
    error: reportOf(failure),
  };
}
