/**
 * What the processes of a `serve` with several workers tell each other over the cluster's IPC
 * channel (./cluster.ts is the primary, ./worker.ts each worker).
 */
import type { ErrorReport } from '../../core/errors.js';

/** Answers counted by the class of their status. */
export type StatusClass = '2xx' | '3xx' | '4xx' | '5xx';
export type AnswerTotals = Record<StatusClass, number>;

/** What a worker needs to serve: the options the primary resolved, passed in its environment. */
export interface WorkerSetup {
  out: string;
  port: number;
  host: string;
  /** This worker's share of the answer cache. */
  cacheBytes: number;
  verbose: boolean;
  /** Count answers and report them (the primary serves --metrics). */
  tally: boolean;
}

/** The environment variable that carries a worker's setup (JSON). */
export const WORKER_SETUP_ENV = 'PROFILE_SNAPSHOT_SERVE_WORKER';

export type WorkerMessage =
  | { type: 'listening'; address: { host: string; port: number } }
  /** The worker cannot serve (the port is busy, the snapshot is gone): it exits after this. */
  | { type: 'failed'; report: Pick<ErrorReport, 'kind' | 'message' | 'hint'> }
  /** The worker's running totals since it started. */
  | { type: 'tally'; totals: AnswerTotals };

export type PrimaryMessage = { type: 'stop' };

export const noAnswers = (): AnswerTotals => ({ '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 });

/** A counter of answers by status class into `totals`, for the origin's `count` option. */
export function countInto(totals: AnswerTotals): (status: number) => void {
  return (status) => {
    const key: StatusClass = status >= 500 ? '5xx' : status >= 400 ? '4xx' : status >= 300 ? '3xx' : '2xx';
    totals[key] += 1;
  };
}
