/**
 * `watch --publish`: a publish to the bucket after each cycle that changed the tree. Never two at
 * once: a request while one runs asks for one more run after it, and further requests fold into that
 * one (it publishes the tree as it is by then). A failed publish leaves the bucket behind the tree,
 * so the next cycle publishes again even when it changed nothing. Failures are reported, never fatal.
 *
 * Each publish reads a pinned generation of the tree (output/pin.ts): the watcher's own cycles
 * commit on while it runs, however many, and it still finishes with the tree it started from. It
 * runs in a thread of its own (publish-thread.ts), so the cycles' builds do not hold its requests.
 */
import { performance } from 'node:perf_hooks';
import { TreePin } from '../output/pin.js';
import type { PublishOptions, PublishReport } from '../publish/report.js';
import { DEFAULT_LEASE_TTL_MS } from '../publish/lease/defaults.js';
import { reportOf } from '../core/errors.js';
import { Leadership, type Role } from './leadership.js';
import { PublishPace } from './publish-progress.js';
import { publishGeneration, PublishThread } from './publish-thread.js';
import type { CycleStatus, PublishStatus } from './status.js';

/** A standby's look comes this long after the lease should have expired (timers fire a little early). */
const WAKE_MARGIN_MS = 50;

export interface PublishResult {
  cycle: number;
  report: PublishReport | undefined;
  error: NonNullable<CycleStatus['error']> | undefined;
  durationMs: number;
}

export interface PublishHooks {
  onStart(cycle: number): void;
  /** A publish under way moved on (called often: the watcher saves its status at its own pace). */
  onProgress(): void;
  onFinish(result: PublishResult): void;
  /** The watcher became leader (it publishes) or standby (another watcher does). */
  onRole(status: Pick<PublishStatus, 'role' | 'leader' | 'leaseAgeSeconds'>): void;
}

export class PublishRunner {
  private running: Promise<void> | undefined;
  private pendingCycle: number | undefined;
  private readonly status: PublishStatus;
  /** Several watchers may publish to one prefix: only the leader does (see leadership.ts). */
  private readonly leadership: Leadership;
  private lastRole: Role | undefined;
  /** The last successful cycle, and a standby's look at the moment the leader's lease would expire. */
  private lastCycle: number | undefined;
  private wake: NodeJS.Timeout | undefined;
  private closed = false;
  /** The publish under way's progress. */
  private pace: PublishPace | undefined;
  /** Called once the publish under way is past its reads (see pastItsReads). */
  private readonly readsDone: (() => void)[] = [];

  constructor(
    private readonly options: Omit<PublishOptions, 'onProgress' | 'dryRun' | 'full' | 'generation'>,
    to: string,
    private readonly hooks: PublishHooks,
  ) {
    this.leadership = new Leadership({
      remote: options.remote,
      shard: options.shard,
      ttlMs: options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
      singleWriter: Boolean(options.singleWriter),
    });
    // A new watcher cannot know the bucket is current: its first cycle publishes (a quiet check if so).
    this.status = {
      to,
      running: false,
      runs: 0,
      consecutiveFailures: 0,
      behind: true,
      lastSuccessAt: null,
      lastFailureAt: null,
      lastError: null,
      last: null,
      total: { put: 0, deleted: 0 },
      role: 'standby',
      leader: null,
      leaseAgeSeconds: null,
      progress: null,
    };
  }

  snapshot(): PublishStatus {
    return { ...this.status, total: { ...this.status.total }, ...this.leadership.status(), progress: this.pace?.status() ?? null };
  }

  /** After a successful cycle: publish if it changed the tree or the bucket is still behind. */
  afterCycle(cycle: number, changed: boolean): void {
    this.lastCycle = cycle;
    if (changed) this.status.behind = true;
    // A lead lost since the last look (renewals too slow, the bucket out of reach) is looked at
    // again: retaken if still this watcher's, then published, as another may have published meanwhile.
    if (this.lastRole === 'leader' && this.leadership.role !== 'leader') this.status.behind = true;
    if (!this.status.behind) return;
    // The publish under way covers an unchanged tree; if it fails, the next cycle asks again.
    if (this.running !== undefined && !changed) return;
    this.pendingCycle = cycle;
    if (this.running === undefined) this.running = this.drain();
  }

  /**
   * The watcher's first look at the lease, before its first build: its status names the leader (or
   * itself) from the start. Waits at most `waitMs`; a bucket that cannot be read is reported by the
   * first publish.
   */
  async firstLook(waitMs: number): Promise<void> {
    // Loads while the first cycle builds: the first publish does not wait for it.
    PublishThread.shared();
    const look = this.leads().catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([look, new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
  }

  /**
   * Resolves once no publish is reading the tree's manifest and the bucket's state (the start of a
   * publish, until its plan is made), or after `waitMs`. The next cycle waits for it: at a million
   * profiles the two read beside a cycle's own buffers made the watcher's highest peaks.
   */
  pastItsReads(waitMs: number): Promise<void> {
    if (this.running === undefined || this.pastReads()) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, waitMs);
      const readsDone = this.readsDone;
      function done(): void {
        clearTimeout(timer);
        const at = readsDone.indexOf(done);
        if (at !== -1) readsDone.splice(at, 1);
        resolve();
      }
      readsDone.push(done);
    });
  }

  /** Whether the publish under way has made its plan: it is sending or deleting. */
  private pastReads(): boolean {
    const phase = this.pace?.currentPhase;
    return phase === 'upload' || phase === 'delete';
  }

  private endOfReads(): void {
    for (const done of [...this.readsDone]) done();
  }

  /** At the watcher's end: starts no publish of its own accord, and resolves once none runs or is pending. */
  async finish(): Promise<void> {
    this.closed = true;
    clearTimeout(this.wake);
    await this.running;
  }

  /** At the watcher's end, once idle: hands the lead over at once (a standby takes it next cycle). */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.wake);
    await this.leadership.close();
  }

  /**
   * A standby looks at the lease again the moment the leader's, as last seen, would expire: it leads
   * (and publishes the tree of its last cycle) then, not up to a cycle later.
   */
  private armWake(): void {
    clearTimeout(this.wake);
    const inMs = this.leadership.leaderFreeInMs;
    if (inMs === undefined || this.closed) return;
    this.wake = setTimeout(() => {
      if (!this.closed && this.lastCycle !== undefined && this.running === undefined) this.afterCycle(this.lastCycle, false);
    }, inMs + WAKE_MARGIN_MS);
    this.wake.unref();
  }

  /**
   * Whether this watcher leads the prefix now. A standby's tree stays unpublished (behind) and it looks
   * again after its next cycle; a bucket that cannot be read counts as a failed publish.
   */
  private async leads(): Promise<boolean> {
    const role = await this.leadership.check();
    if (role !== this.lastRole) {
      this.lastRole = role;
      this.hooks.onRole(this.leadership.status());
    }
    return role === 'leader';
  }

  private async drain(): Promise<void> {
    try {
      while (this.pendingCycle !== undefined) {
        const cycle = this.pendingCycle;
        this.pendingCycle = undefined;
        await this.runOnce(cycle);
      }
    } finally {
      this.running = undefined;
      this.endOfReads();
    }
  }

  private async runOnce(cycle: number): Promise<void> {
    const started = performance.now();
    let report: PublishReport | undefined, error: PublishResult['error'];
    try {
      if (!(await this.leads())) return this.armWake();
      this.status.running = true;
      this.status.runs++;
      const pace = (this.pace = new PublishPace(cycle));
      this.hooks.onStart(cycle);
      report = await this.publishPinned((progress) => {
        pace.update(progress);
        this.hooks.onProgress();
        if (this.pastReads()) this.endOfReads();
      });
    } catch (failure) {
      error = reportOf(failure);
    }
    this.pace = undefined;
    this.endOfReads();
    const now = new Date().toISOString();
    const status = this.status;
    status.running = false;
    if (report) {
      status.consecutiveFailures = 0;
      status.lastSuccessAt = now;
      status.lastError = null;
      // A cycle that changed the tree meanwhile asked for another run: still behind until that one ends.
      // A shard whose part the joined list does not hold yet (another shard had none) is behind too:
      // each cycle publishes again (a quiet check and a join) until the list holds it.
      status.behind = this.pendingCycle !== undefined || report.shard?.listHoldsShard === false;
      status.last = { put: report.objects.put, deleted: report.objects.deleted };
      status.total.put += report.objects.put;
      status.total.deleted += report.objects.deleted;
    } else {
      status.consecutiveFailures++;
      status.lastFailureAt = now;
      status.lastError = error ?? null;
      status.behind = true;
    }
    this.hooks.onFinish({ cycle, report, error, durationMs: Math.round(performance.now() - started) });
  }

  /**
   * Publishes the generation of the tree the last commit left, pinned: taken here, between two of
   * this watcher's commits (a cycle's build is synchronous), and held until the publish ends.
   */
  private async publishPinned(onProgress: NonNullable<PublishOptions['onProgress']>): Promise<PublishReport> {
    const generation = TreePin.take(this.options.out);
    try {
      return await publishGeneration(this.options, generation, this.leadership.lockSightings, onProgress);
    } finally {
      generation.release();
    }
  }
}
