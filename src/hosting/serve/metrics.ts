/**
 * `serve --metrics`: the whole server's figures and health, whatever its number of workers. Each
 * worker counts its answers and reports its running totals (./worker.ts); here they are summed
 * into one registry, by worker slot (0 to n-1: a replacement takes the slot of the worker it
 * replaces, so the label set stays as small as the number of workers).
 *
 * Answers a worker finished after its last report are lost with it when it dies (it reports every
 * second and when it stops).
 */
import { Counter, Gauge, Registry } from 'prom-client';
import { noAnswers, type AnswerTotals, type StatusClass } from './messages.js';

/** The body of /healthz. */
export interface ServeHealth {
  ok: boolean;
  workers: { wanted: number; listening: number };
  restarts: number;
  stopping: boolean;
}

export class ServeMetrics {
  readonly registry = new Registry();
  private readonly answers: Counter<'worker' | 'status'>;
  private readonly restartsTotal: Counter;
  private readonly workers: Gauge<'state'>;
  /** Each worker process's totals as last reported, by its process id. */
  private readonly lastTotals = new Map<number, AnswerTotals>();
  private restarts = 0;
  private stopping = false;

  constructor(
    private readonly wanted: number,
    /** Workers listening now, as the one who starts them knows it. */
    private readonly listening: () => number,
  ) {
    const registers = [this.registry];
    this.answers = new Counter({
      name: 'profile_snapshot_serve_answers_total',
      help: 'Answers the server finished, by worker slot and status class (2xx, 3xx, 4xx, 5xx).',
      labelNames: ['worker', 'status'],
      registers,
    });
    for (let slot = 0; slot < wanted; slot++)
      for (const status of Object.keys(noAnswers())) this.answers.inc({ worker: String(slot), status }, 0);
    this.restartsTotal = new Counter({
      name: 'profile_snapshot_serve_worker_restarts_total',
      help: 'Workers that died and were replaced.',
      registers,
    });
    this.workers = new Gauge({
      name: 'profile_snapshot_serve_workers',
      help: 'Workers wanted (--workers), and listening now.',
      labelNames: ['state'],
      registers,
      collect: () => {
        this.workers.set({ state: 'wanted' }, this.wanted);
        this.workers.set({ state: 'listening' }, this.listening());
      },
    });
  }

  /** A worker's running totals: what it answered since its last report is added to its slot. */
  report(slot: number, pid: number, totals: AnswerTotals): void {
    const last = this.lastTotals.get(pid) ?? noAnswers();
    for (const status of Object.keys(totals) as StatusClass[]) {
      const more = totals[status] - last[status];
      if (more > 0) this.answers.inc({ worker: String(slot), status }, more);
    }
    this.lastTotals.set(pid, { ...totals });
  }

  /** A worker exited: its totals so far are counted, its next ones will be a new process's. */
  workerGone(pid: number): void {
    this.lastTotals.delete(pid);
  }

  /** A worker died and another starts in its slot. */
  workerReplaced(): void {
    this.restarts += 1;
    this.restartsTotal.inc();
  }

  stop(): void {
    this.stopping = true;
  }

  /** Healthy while every wanted worker listens and the server is not stopping. */
  health(): ServeHealth {
    const listening = this.listening();
    const ok = !this.stopping && listening === this.wanted;
    return { ok, workers: { wanted: this.wanted, listening }, restarts: this.restarts, stopping: this.stopping };
  }

  async text(): Promise<{ type: string; text: string }> {
    return { type: this.registry.contentType, text: await this.registry.metrics() };
  }
}
