/**
 * `watch --metrics`: the watcher's figures in the Prometheus text format (`GET /metrics`) and a
 * health check for a load balancer or an orchestrator (`GET|HEAD /healthz`), on a small HTTP server
 * of its own. Counters and the cycle histogram are fed by the watcher's events; the gauges are read
 * from its status at each scrape, so they are as fresh as the request.
 *
 * The registry is this watcher's own (not prom-client's global one): nothing else in the process can
 * add to it, and two watchers in one process (tests) never share figures. Labels take values from
 * fixed small sets only: a path, bucket, endpoint or holder name would be private, and an open set
 * of label values would grow the registry without end.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { serveMetrics, type MetricsEndpoint } from '../core/metrics-endpoint.js';
import type { WatchEvent } from './loop.js';
import type { PublishResult } from './publisher.js';
import { ShardMetrics, type ListHealth } from './shard-metrics.js';
import type { CycleStatus, PublishProgressStatus, WatchStatus } from './status.js';

export interface MetricsOptions {
  /** The watcher publishes (--publish): the publish metrics exist only then. */
  publishes: boolean;
  /** /healthz fails once what it watches (the tree, or the leader's bucket) is older than this. */
  healthMaxAgeMs: number;
  /** The shard the watcher builds (`i/n`): its metrics and /healthz then say what became of the joined list. */
  shard?: string | undefined;
}

/** The body of /healthz. Ages in seconds; null when never. */
export interface Health {
  ok: boolean;
  /** null: a watcher without --publish. */
  role: 'leader' | 'standby' | null;
  lastCycleAgeSeconds: number | null;
  lastPublishAgeSeconds?: number | null;
  /** How long the bucket has lagged behind the tree (0 when current). */
  behindSeconds?: number;
  /** The publish under way (null when none): while it moves, a bucket behind is no outage. */
  publishing?: PublishProgressStatus | null;
  consecutiveFailures: number;
  /** A shard's watcher: its shard, and the joined list as its last publish found it. */
  list?: ListHealth;
}

/** From 50 ms (an idle cycle of a small store) to 2 minutes (a full rebuild of a large one). */
const CYCLE_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120];

type PublishGauges = Record<
  | 'sinceLastPublish'
  | 'behind'
  | 'leader'
  | 'leaseAge'
  | 'leaderInfo'
  | 'running'
  | 'objectsDone'
  | 'objectsTotal'
  | 'bytesSent'
  | 'eta'
  | 'sinceProgress'
  | 'stallTimeout',
  Gauge
>;

export class WatchMetrics {
  readonly registry = new Registry();
  private readonly cycleSeconds: Histogram<'outcome'>;
  private readonly rowsRead: Counter;
  private readonly filesWritten: Counter;
  private readonly sinceLastCycle: Gauge;
  private readonly consecutiveFailures: Gauge;
  private readonly publishes: Counter<'outcome'> | undefined;
  private readonly publishGauges: PublishGauges | undefined;
  private readonly shardMetrics: ShardMetrics | undefined;
  /**
   * When the bucket started to lag behind the tree: the first change no successful publish has
   * carried yet (status.publish.behind says whether it lags; this says since when). A new watcher
   * cannot know the bucket is current, so it counts from its start, as the publisher does.
   */
  private behindSinceMs: number | null = Date.now();
  private lastChangedCycle = 0;
  private endpoint: MetricsEndpoint | undefined;

  constructor(private readonly options: MetricsOptions) {
    const registers = [this.registry];
    this.cycleSeconds = new Histogram({
      name: 'profile_snapshot_cycle_duration_seconds',
      help: 'Duration of watch cycles (a build each), by outcome (ok or failed).',
      labelNames: ['outcome'],
      buckets: CYCLE_BUCKETS,
      registers,
    });
    // Both series from the start: a rate() over a series that appears late misses its first values.
    for (const outcome of ['ok', 'failed']) this.cycleSeconds.zero({ outcome });
    this.rowsRead = counter('profile_snapshot_rows_read_total', 'Users read from the store by successful cycles.', registers);
    this.filesWritten = counter('profile_snapshot_files_written_total', 'Files written to the tree by successful cycles.', registers);
    this.sinceLastCycle = gauge(
      'profile_snapshot_seconds_since_last_cycle',
      'Seconds since the last successful cycle finished: how old the tree is. -1 before the first.',
      registers,
    );
    this.consecutiveFailures = gauge('profile_snapshot_consecutive_failures', 'Cycles failed in a row (0 after a success).', registers);
    if (options.publishes) {
      this.publishes = new Counter({
        name: 'profile_snapshot_publishes_total',
        help: 'Publishes to the bucket, by outcome (success or failure).',
        labelNames: ['outcome'],
        registers,
      });
      for (const outcome of ['success', 'failure']) this.publishes.inc({ outcome }, 0);
      this.publishGauges = publishGauges(registers);
    }
    if (options.shard !== undefined) this.shardMetrics = new ShardMetrics(options.shard, registers);
  }

  /** Counts one of the watcher's events (the CLI passes it every one). */
  observe(event: WatchEvent): void {
    if (event.type === 'cycle') this.countCycle(event.cycle);
    else if (event.type === 'publish-finish') {
      this.countPublish(event.result);
      this.shardMetrics?.countPublish(event.result);
    }
    // A standby that takes over answers for the bucket from now on: the lag before was the old leader's.
    else if (event.type === 'publish-role' && event.status.role === 'leader')
      this.behindSinceMs = Math.max(this.behindSinceMs ?? 0, Date.now());
  }

  /** The metrics in the Prometheus text format, the gauges read from `status` now. */
  async text(status: WatchStatus): Promise<string> {
    this.refresh(status, Date.now());
    return this.registry.metrics();
  }

  health(status: WatchStatus): Health {
    const nowMs = Date.now();
    const health = assessHealth(status, this.behindSinceMs, this.options.healthMaxAgeMs, nowMs);
    if (this.shardMetrics === undefined) return health;
    // The leader answers for its shard in the joined list too: stale once the list has lacked its part too long.
    const lags = health.role === 'leader' && this.shardMetrics.lagMs(nowMs) > this.options.healthMaxAgeMs;
    return { ...health, ok: health.ok && !lags, list: this.shardMetrics.health() };
  }

  /**
   * Serves /metrics and /healthz on `host:port` (port 0: any free one), reading the watcher's
   * `status` at each request; returns the bound address.
   */
  async listen(host: string, port: number, status: () => WatchStatus): Promise<{ host: string; port: number }> {
    this.endpoint = await serveMetrics(host, port, {
      metrics: async () => ({ type: this.registry.contentType, text: await this.text(status()) }),
      health: () => this.health(status()),
    });
    return this.endpoint.address;
  }

  /** Stops the server, ending keep-alive connections (a scraper holds one open between scrapes). */
  close(): Promise<void> {
    const endpoint = this.endpoint;
    this.endpoint = undefined;
    return endpoint?.close() ?? Promise.resolve();
  }

  private countCycle(cycle: CycleStatus): void {
    this.cycleSeconds.observe({ outcome: cycle.ok ? 'ok' : 'failed' }, cycle.durationMs / 1000);
    if (!cycle.ok) return;
    this.rowsRead.inc(cycle.rowsRead ?? 0);
    this.filesWritten.inc(cycle.files?.written ?? 0);
    if (!cycle.changed) return;
    this.lastChangedCycle = cycle.number;
    this.behindSinceMs ??= Date.parse(cycle.finishedAt);
  }

  private countPublish(result: PublishResult): void {
    this.publishes?.inc({ outcome: result.report ? 'success' : 'failure' });
    if (!result.report) return;
    // The bucket now holds the tree of cycle `result.cycle`. A change made while the publish ran is
    // no older than the run: counting from its start overstates the lag by less than one publish.
    this.behindSinceMs = this.lastChangedCycle > result.cycle ? Date.now() - result.durationMs : null;
  }

  private refresh(status: WatchStatus, nowMs: number): void {
    this.sinceLastCycle.set(secondsOrMinusOne(ageMs(status.lastSuccessAt, nowMs)));
    this.consecutiveFailures.set(status.consecutiveFailures);
    const publish = status.publish;
    if (!publish || !this.publishGauges) return;
    this.publishGauges.sinceLastPublish.set(secondsOrMinusOne(ageMs(publish.lastSuccessAt, nowMs)));
    this.publishGauges.behind.set(publish.behind ? 1 : 0);
    this.publishGauges.leader.set(publish.role === 'leader' ? 1 : 0);
    this.publishGauges.leaseAge.set(publish.leaseAgeSeconds ?? -1);
    // One series: the leader as this watcher last saw it (itself, or the one it stands by for).
    this.publishGauges.leaderInfo.reset();
    if (publish.leader !== null) this.publishGauges.leaderInfo.set({ host: publish.leader.host, pid: String(publish.leader.pid) }, 1);
    const progress = publish.progress;
    this.publishGauges.running.set(publish.running ? 1 : 0);
    this.publishGauges.objectsDone.set(progress?.done ?? 0);
    this.publishGauges.objectsTotal.set(progress?.total ?? 0);
    this.publishGauges.bytesSent.set(progress?.bytes ?? 0);
    this.publishGauges.eta.set(progress?.etaSeconds ?? -1);
    // Answered only while the event loop runs: an await that never resolves shows here, a blocked loop as a failed scrape.
    this.publishGauges.sinceProgress.set(status.stall?.secondsSinceProgress ?? 0);
    this.publishGauges.stallTimeout.set(status.stall?.timeoutSeconds ?? 0);
  }
}

/**
 * Healthy while what this watcher answers for is fresh. The leader answers for the bucket: stale
 * once it has lagged behind the tree (a change no publish carried) for longer than `maxAgeMs`, or
 * once the tree itself is that old. Not the age of the last publish: a watcher publishes only after
 * changes, so an idle store would fail a healthy leader. A standby, or a watcher that only builds,
 * answers for its tree: stale once the last successful cycle is older than `maxAgeMs`. Before any
 * success, the watcher's own age counts (its first cycle is under way).
 */
export function assessHealth(status: WatchStatus, behindSinceMs: number | null, maxAgeMs: number, nowMs: number): Health {
  const uptimeMs = ageMs(status.startedAt, nowMs) ?? 0;
  const cycleMs = ageMs(status.lastSuccessAt, nowMs);
  const base = { lastCycleAgeSeconds: seconds(cycleMs), consecutiveFailures: status.consecutiveFailures };
  const publish = status.publish;
  const treeMs = cycleMs ?? uptimeMs;
  if (!publish) return { ok: treeMs <= maxAgeMs, role: null, ...base };
  const lastPublishAgeSeconds = seconds(ageMs(publish.lastSuccessAt, nowMs));
  // A standby publishes nothing: the bucket's lag is the leader's to report.
  if (publish.role !== 'leader') return { ok: treeMs <= maxAgeMs, role: publish.role, ...base, lastPublishAgeSeconds };
  const behindMs = publish.behind ? Math.max(0, nowMs - (behindSinceMs ?? nowMs - uptimeMs)) : 0;
  // A publish that keeps moving is working, however long (a large tree's first): no reason to restart it.
  const publishing = publish.progress ?? null;
  const moving = publishing !== null && (ageMs(publishing.movedAt, nowMs) ?? Infinity) <= maxAgeMs;
  const ok = treeMs <= maxAgeMs && (behindMs <= maxAgeMs || moving);
  return { ok, role: 'leader', ...base, lastPublishAgeSeconds, behindSeconds: Math.round(behindMs) / 1000, publishing };
}

function publishGauges(registers: Registry[]): PublishGauges {
  return {
    sinceLastPublish: gauge(
      'profile_snapshot_seconds_since_last_publish',
      'Seconds since the last successful publish; -1 before the first. Grows while the store is idle (a publish follows changes only): alert on profile_snapshot_publish_behind or /healthz.',
      registers,
    ),
    behind: gauge(
      'profile_snapshot_publish_behind',
      '1 while the bucket may lag behind the tree (a change not yet published), else 0.',
      registers,
    ),
    leader: gauge('profile_snapshot_leader', '1 while this watcher holds the leadership lease and publishes, 0 on standby.', registers),
    leaseAge: gauge(
      'profile_snapshot_leader_lease_age_seconds',
      'Seconds since the leadership lease was last renewed, as this watcher last saw it (0 on the leader); -1 before the first look.',
      registers,
    ),
    leaderInfo: new Gauge({
      name: 'profile_snapshot_leader_info',
      help: 'The watcher that leads the prefix, as this watcher last saw it: 1 for its host and pid.',
      labelNames: ['host', 'pid'],
      registers,
    }),
    running: gauge('profile_snapshot_publish_running', '1 while a publish runs, else 0.', registers),
    objectsDone: gauge(
      'profile_snapshot_publish_objects_done',
      'Objects the publish under way has done in its current phase (listed, uploaded or deleted); 0 when none runs.',
      registers,
    ),
    objectsTotal: gauge(
      // No _total suffix: a gauge that falls to 0 between publishes, and Prometheus keeps _total for counters.
      'profile_snapshot_publish_objects',
      'Objects in the current phase of the publish under way; 0 when none runs. profile_snapshot_publish_objects_done over this is its progress.',
      registers,
    ),
    bytesSent: gauge('profile_snapshot_publish_bytes_sent', 'Bytes the publish under way has uploaded; 0 when none runs.', registers),
    eta: gauge(
      'profile_snapshot_publish_eta_seconds',
      'Seconds the current phase of the publish under way still needs at its pace so far; -1 when unknown or none runs.',
      registers,
    ),
    sinceProgress: gauge(
      'profile_snapshot_seconds_since_progress',
      "Seconds since the watcher's main thread last made progress; at profile_snapshot_stall_timeout_seconds it lets its leases go and exits 13.",
      registers,
    ),
    stallTimeout: gauge(
      'profile_snapshot_stall_timeout_seconds',
      'The --stall-timeout: the longest the main thread may go without progress.',
      registers,
    ),
  };
}

const counter = (name: string, help: string, registers: Registry[]) => new Counter({ name, help, registers });
const gauge = (name: string, help: string, registers: Registry[]) => new Gauge({ name, help, registers });

function ageMs(iso: string | null, nowMs: number): number | null {
  const at = iso === null ? NaN : Date.parse(iso);
  // A clock stepped back must not make an age negative.
  return Number.isNaN(at) ? null : Math.max(0, nowMs - at);
}

const seconds = (ms: number | null): number | null => (ms === null ? null : Math.round(ms) / 1000);
const secondsOrMinusOne = (ms: number | null): number => seconds(ms) ?? -1;
