/**
 * How far the publish under way got, for status.json, the metrics and the cycle line: a large tree's
 * first publish runs for minutes, and an operator must be able to tell it working from stuck.
 */
import type { PublishProgress } from '../publish/report.js';
import type { PublishProgressStatus } from './status.js';

/** Fed every progress event of one publish; estimates the time left from the current phase's pace. */
export class PublishPace {
  private readonly startedAt = new Date().toISOString();
  private phase: PublishProgress['phase'] | undefined;
  private phaseStartedMs = 0;
  private last: PublishProgress | undefined;
  private movedAtMs = Date.now();

  constructor(private readonly cycle: number) {}

  update(progress: PublishProgress): void {
    const nowMs = Date.now();
    if (progress.phase !== this.phase) {
      this.phase = progress.phase;
      this.phaseStartedMs = nowMs;
    }
    if (this.last === undefined || progress.done !== this.last.done || progress.phase !== this.last.phase) this.movedAtMs = nowMs;
    this.last = progress;
  }

  /** The phase of the last event; 'prepare' before any (reading the tree and the bucket's record). */
  get currentPhase(): PublishProgressStatus['phase'] {
    return this.phase ?? 'prepare';
  }

  private head() {
    return { cycle: this.cycle, startedAt: this.startedAt, movedAt: new Date(this.movedAtMs).toISOString() };
  }

  status(nowMs = Date.now()): PublishProgressStatus {
    const progress = this.last;
    if (progress === undefined) return { ...this.head(), phase: this.currentPhase, done: 0, total: 0, bytes: 0, etaSeconds: null };
    const { phase, done, total, bytes } = progress;
    return { ...this.head(), phase, done, total, bytes, etaSeconds: this.etaSeconds(progress, nowMs) };
  }

  /** The phase's objects left at its pace so far; null before a second of it, or before any object. */
  private etaSeconds(progress: PublishProgress, nowMs: number): number | null {
    const elapsedMs = nowMs - this.phaseStartedMs;
    if (progress.done === 0 || elapsedMs < 1000) return null;
    return Math.round((((progress.total - progress.done) / progress.done) * elapsedMs) / 1000);
  }
}
