/**
 * `--exec`: a shell command run after each cycle that changed the tree (a deploy, an rsync, a CDN
 * purge). It never runs twice at once: a changing cycle that ends while the command still runs asks
 * for one more run, and any further requests meanwhile fold into that one (the deploy that follows
 * picks up all of them, since it reads the tree as it is then). Its failure is reported, never fatal.
 *
 * The command runs in its own process group, so a Ctrl-C meant for the watcher does not cut a deploy
 * short (the watcher finishes its work first), and a forced stop can end the whole group.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import type { BuildReport } from '../build.js';

/** What the next run is told, in environment variables (see `execEnvironment`). */
export interface ExecRequest {
  cycle: number;
  report: BuildReport;
  /** Changing cycles this run covers: more than 1 when requests folded while a run was going. */
  changedCycles: number;
}

export interface ExecResult {
  cycle: number;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the command could not be started at all. */
  error: string | null;
  durationMs: number;
}

export interface ExecHooks {
  onStart(request: ExecRequest): void;
  onFinish(result: ExecResult): void;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** The change summary handed to the command. Counts are of the cycle that triggered the run. */
function execEnvironment(request: ExecRequest, summary: string): Record<string, string> {
  const { report } = request;
  return {
    PROFILE_SNAPSHOT_OUT: report.out,
    PROFILE_SNAPSHOT_CYCLE: String(request.cycle),
    PROFILE_SNAPSHOT_CHANGED_CYCLES: String(request.changedCycles),
    PROFILE_SNAPSHOT_WRITTEN: String(report.files.written),
    PROFILE_SNAPSHOT_REMOVED: String(report.files.removed),
    PROFILE_SNAPSHOT_UNCHANGED: String(report.files.unchanged),
    PROFILE_SNAPSHOT_PROFILES: String(report.profiles),
    PROFILE_SNAPSHOT_CREATORS: String(report.creators),
    PROFILE_SNAPSHOT_SKIPPED: String(report.skipped),
    PROFILE_SNAPSHOT_WARNINGS: String(report.warnings.length),
    PROFILE_SNAPSHOT_SNAPSHOT_TIME: report.snapshotTime,
    PROFILE_SNAPSHOT_SUMMARY: summary,
  };
}

export class ExecRunner {
  private child: ChildProcess | undefined;
  private pending: ExecRequest | undefined;
  private lastStartedAt = -Infinity;
  private delayed: NodeJS.Timeout | undefined;
  private idleWaiters: (() => void)[] = [];
  runs = 0;
  consecutiveFailures = 0;
  lastExitCode: number | null = null;
  lastFinishedAt: string | null = null;

  constructor(
    readonly command: string,
    private readonly env: NodeJS.ProcessEnv,
    private readonly summarize: (request: ExecRequest) => string,
    private readonly hooks: ExecHooks,
    /** Minimum time between the starts of two runs (a deploy target's rate limit); 0 for none. */
    private readonly minIntervalMs = 0,
  ) {}

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Runs now, or once after the current run when one is going (folding with other requests). */
  request(cycle: number, report: BuildReport): void {
    const changedCycles = (this.pending?.changedCycles ?? 0) + 1;
    this.pending = { cycle, report, changedCycles };
    if (!this.running && this.delayed === undefined) this.startPending();
  }

  /** Resolves when no run is going and none is pending. */
  idle(): Promise<void> {
    if (!this.running && this.pending === undefined) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Forced stop: drops a pending run and ends the running one's process group. */
  kill(): void {
    this.pending = undefined;
    clearTimeout(this.delayed);
    this.delayed = undefined;
    const child = this.child;
    if (child?.pid === undefined) {
      for (const resolve of this.idleWaiters.splice(0)) resolve();
      return;
    }
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      // already gone
    }
    // Do not let a command that ignores SIGTERM (or a grandchild holding its pipes) keep us alive.
    child.stdout?.destroy();
    child.stderr?.destroy();
    child.unref();
    this.child = undefined;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private startPending(): void {
    const request = this.pending;
    if (request === undefined) {
      for (const resolve of this.idleWaiters.splice(0)) resolve();
      return;
    }
    // Too soon after the last start: wait (requests keep folding into the pending run meanwhile).
    // The monotonic clock: a wall clock stepped back (NTP, a resumed VM) must not stretch the wait.
    const wait = this.lastStartedAt + this.minIntervalMs - performance.now();
    if (wait > 0) {
      this.delayed = setTimeout(() => {
        this.delayed = undefined;
        this.startPending();
      }, wait);
      return;
    }
    this.pending = undefined;
    this.runs++;
    const started = performance.now();
    this.lastStartedAt = started;
    this.hooks.onStart(request);
    let child: ChildProcess;
    let startError: string | null = null;
    try {
      child = spawn(this.command, {
        shell: true,
        detached: true, // own process group: see the module comment
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...this.env, ...execEnvironment(request, this.summarize(request)) },
      });
    } catch (cause) {
      startError = cause instanceof Error ? cause.message : String(cause);
      this.finish(request, started, null, null, startError);
      return;
    }
    this.child = child;
    child.stdout?.on('data', (chunk: Buffer) => this.hooks.stdout.write(chunk));
    child.stderr?.on('data', (chunk: Buffer) => this.hooks.stderr.write(chunk));
    child.on('error', (error) => {
      startError = error.message;
    });
    // 'close' comes after the streams are drained (and also after 'error' when spawn failed).
    child.on('close', (code, signal) => {
      if (this.child !== child) return; // killed by a forced stop: already accounted for
      this.child = undefined;
      this.finish(request, started, code, signal, startError);
    });
  }

  private finish(request: ExecRequest, started: number, code: number | null, signal: NodeJS.Signals | null, error: string | null): void {
    const failed = error !== null || code !== 0;
    this.consecutiveFailures = failed ? this.consecutiveFailures + 1 : 0;
    this.lastExitCode = code;
    this.lastFinishedAt = new Date().toISOString();
    this.hooks.onFinish({ cycle: request.cycle, exitCode: code, signal, error, durationMs: Math.round(performance.now() - started) });
    this.startPending();
  }
}
