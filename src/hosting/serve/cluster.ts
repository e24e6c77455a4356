/**
 * `serve` on several cores: a primary process that forks the workers (./worker.ts), which
 * share one listening socket through `node:cluster` (the primary binds the port once and hands the
 * connections to the workers in turn). The primary serves nothing itself; it
 *
 *   - starts the workers and reports the address once all of them listen, or the first one's reason
 *     why it cannot (a busy port, a folder with no snapshot) after stopping the others;
 *   - replaces a worker that dies, and says so on stderr;
 *   - drains every worker on SIGTERM/SIGINT (each finishes its requests in flight, then exits);
 *   - sums the workers' figures for /metrics and /healthz (./metrics.ts).
 *
 * Each worker keeps its own answer cache, checked against the file on every request, so an atomic
 * swap of the tree is seen by every worker as soon as by a single process.
 */
import cluster, { type Worker } from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { SnapshotError, type ErrorReport } from '../../core/errors.js';
import { ServeMetrics } from './metrics.js';
import { WORKER_SETUP_ENV, type PrimaryMessage, type WorkerMessage, type WorkerSetup } from './messages.js';

/** The CLI's launcher, which a worker runs (`serve`, its setup in its environment). */
const LAUNCHER = fileURLToPath(new URL('../../../bin/profile-snapshot.js', import.meta.url));
/** How long a worker that drained on its own signal waits for the primary's stop before it is replaced. */
const DRAINED_WORKER_WAIT_MS = 1000;
/** A replacement that cannot start is tried again after this pause, not in a tight loop. */
const RESTART_PAUSE_MS = 1000;

export interface ClusterOptions {
  setup: WorkerSetup;
  workers: number;
  log: (line: string) => void;
}

interface Slot {
  worker: Worker;
  listening: boolean;
}

export class ServeCluster {
  readonly metrics: ServeMetrics;
  private readonly slots: Slot[] = [];
  private stopping = false;
  /** Where the workers listen (the port the primary bound for them: a free one for port 0). */
  address: { host: string; port: number } | undefined;
  private allExited: (() => void) | undefined;

  constructor(private readonly options: ClusterOptions) {
    this.metrics = new ServeMetrics(options.workers, () => this.slots.filter((slot) => slot.listening).length);
  }

  /** Starts every worker; resolves once all listen, rejects with the first refusal (all stopped). */
  async start(): Promise<void> {
    cluster.setupPrimary({ exec: LAUNCHER, args: ['serve'], silent: false });
    const started = Array.from({ length: this.options.workers }, (_, slot) => this.fork(slot));
    try {
      await Promise.all(started);
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  /** Drains every worker and waits for all of them to exit. */
  async stop(): Promise<void> {
    this.stopping = true;
    const running = this.slots.map((slot) => slot.worker).filter((worker) => !worker.isDead());
    const gone = new Promise<void>((resolve) => {
      this.allExited = resolve;
    });
    for (const worker of running) tellToStop(worker);
    if (!running.every((worker) => worker.isDead())) await gone;
  }

  /** Forks the worker of `slot`; resolves when it listens, rejects if it cannot. */
  private fork(slot: number): Promise<void> {
    const worker = cluster.fork({ [WORKER_SETUP_ENV]: JSON.stringify(this.options.setup) });
    this.slots[slot] = { worker, listening: false };
    // A channel that broke is the worker's end: its exit is handled below.
    worker.on('error', () => {});
    return new Promise<void>((resolve, reject) => {
      worker.on('message', (message: WorkerMessage) => {
        if (message.type === 'listening') {
          this.slots[slot]!.listening = true;
          this.address = message.address;
          // Forked before the stop and deaf to it until now.
          if (this.stopping) tellToStop(worker);
          resolve();
        } else if (message.type === 'tally') this.metrics.report(slot, worker.process.pid ?? 0, message.totals);
        else if (message.type === 'failed') reject(refusal(message.report));
      });
      // The channel closes after the worker's last message is read; its exit may be seen before that.
      worker.once('disconnect', () => reject(new Error(`worker ${slot} ended before it listened`)));
      worker.once('exit', (code, signal) => this.onExit(slot, worker, code, signal));
    });
  }

  private onExit(slot: number, worker: Worker, code: number | null, signal: string | null): void {
    const held = this.slots[slot]!;
    const wasListening = held.worker === worker && held.listening;
    if (held.worker === worker) held.listening = false;
    this.metrics.workerGone(worker.process.pid ?? 0);
    if (this.stopping) {
      if (this.slots.every((each) => each.worker.isDead())) this.allExited?.();
      return;
    }
    if (!wasListening) return;
    // A worker exits 0 only after draining on a signal of its own. A service manager stopping the
    // service signals every process at once: give the primary's own signal a moment to arrive.
    setTimeout(
      () => {
        if (this.stopping) return;
        this.options.log(`worker ${slot} (pid ${worker.process.pid}) died (${signal ?? `exit code ${code}`}); starting another`);
        this.metrics.workerReplaced();
        void this.replace(slot);
      },
      code === 0 ? DRAINED_WORKER_WAIT_MS : 0,
    );
  }

  /** Starts a worker in `slot` again, pausing between attempts while it cannot start. */
  private async replace(slot: number): Promise<void> {
    while (!this.stopping) {
      try {
        await this.fork(slot);
        this.options.log(`worker ${slot} (pid ${this.slots[slot]!.worker.process.pid}) replaced it, listening`);
        return;
      } catch (error) {
        this.options.log(`worker ${slot} could not start again: ${(error as Error).message}; trying again in ${RESTART_PAUSE_MS / 1000} s`);
        await new Promise((resolve) => setTimeout(resolve, RESTART_PAUSE_MS));
      }
    }
  }
}

/** Asks a worker to drain; one whose channel already closed is ending anyway. */
function tellToStop(worker: Worker): void {
  if (worker.isConnected()) worker.send({ type: 'stop' } satisfies PrimaryMessage, () => {});
}

/** A worker's reason for not serving, as the error it was in the worker (a bug stays a bug). */
function refusal(report: Pick<ErrorReport, 'kind' | 'message' | 'hint'>): Error {
  if (report.kind === 'bug') return new Error(report.message);
  return new SnapshotError(report.kind, report.message, { hint: report.hint ?? undefined });
}
