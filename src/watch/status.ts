/**
 * The watcher's health status: one small JSON file, `<out>/.profile-snapshot/status.json`, replaced
 * atomically (temporary file, then rename) at the start and end of every cycle, so a monitor reads it
 * without parsing logs and never sees half of it. It lives in the state folder, which is never served
 * or deployed. `regenerate` reads it too, to know when the cycle it asked for has finished.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { WriteCounts } from '../output/tree.js';
import type { ChangeSource } from '../incremental/session.js';
import { STATUS_FILE } from '../core/layout.js';
import { replaceFileWith } from '../output/folders.js';

/** The outcome of one cycle. */
export interface CycleStatus {
  number: number;
  startedAt: string;
  /**
   * The host's monotonic clock (process.hrtime, ns) when the cycle started: `regenerate` compares it
   * with the moment it sent SIGHUP to tell "a cycle that started after my request" exactly.
   */
  startedMonoNs: string;
  finishedAt: string;
  durationMs: number;
  ok: boolean;
  /** Whether the cycle changed the tree (some file written or removed). */
  changed: boolean;
  profiles: number | null;
  creators: number | null;
  skipped: number | null;
  /** Rows rendered; the others were kept unrendered (unchanged since the last cycle). */
  rendered: number | null;
  /** Users read from the store: only those whose rows changed, unless the cycle read every row. */
  rowsRead: number | null;
  warnings: number | null;
  files: WriteCounts | null;
  /** Files a full cycle (`regenerate --full`) found damaged and rewrote; null when the cycle did not look. */
  repaired?: number | null;
  /**
   * How the cycle found what changed (`clock`, `comparison`, `stamp`, `every row`), and why it did
   * not follow the store's change clock when the store has one; null for a failed cycle.
   */
  changes?: ChangeSource | null;
  snapshotTime: string | null;
  error: {
    kind: string;
    exitCode: number;
    message: string;
    hint: string | null;
    /** For a bug (kind "bug"): the stack, for the report. */
    stack?: string;
  } | null;
}

/** The `publish` block of the watcher's status file. */
export interface PublishStatus {
  to: string;
  running: boolean;
  runs: number;
  consecutiveFailures: number;
  /** True until a publish succeeds after the tree last changed: the bucket may be behind. */
  behind: boolean;
  lastSuccessAt: string | null;
  lastFailureAt: string | null;
  lastError: CycleStatus['error'];
  /** Objects put and deleted by the last successful publish, and since the watcher started. */
  last: { put: number; deleted: number } | null;
  total: { put: number; deleted: number };
  /**
   * leader: this watcher holds the prefix's leadership lease and publishes; standby: another watcher
   * does, and this one only builds, ready to take over.
   */
  role: 'leader' | 'standby';
  /** The leadership lease's holder as last seen (this watcher when leader); null before the first look. */
  leader: LeaseHolderStatus | null;
  /** Seconds since the holder last renewed the leadership lease, as last seen; null when unknown. */
  leaseAgeSeconds: number | null;
  /** The publish under way, how far it got; null when none runs. */
  progress: PublishProgressStatus | null;
}

/**
 * A publish under way: a long one (a large tree's first, minutes long) reads as working, not stuck.
 * It publishes the tree of `cycle`, pinned: cycles go on meanwhile, and what they change goes out
 * with the next publish.
 */
export interface PublishProgressStatus {
  /** The cycle whose tree is being published. */
  cycle: number;
  startedAt: string;
  /**
   * prepare: reading the tree and the bucket's record; compare: listing the prefix (no record of it
   * to trust); upload: new and changed objects; delete: removed ones.
   */
  phase: 'prepare' | 'compare' | 'upload' | 'delete';
  /** Objects done in this phase, of `total`. */
  done: number;
  total: number;
  /** Bytes uploaded by this publish so far. */
  bytes: number;
  /** Seconds this phase still needs at its pace so far; null until that can be told. */
  etaSeconds: number | null;
  /** When `done` last grew. */
  movedAt: string;
}

/** Who holds a lease on the prefix: never a credential. */
export interface LeaseHolderStatus {
  host: string;
  pid: number;
  /** The holder's own id (a watcher's, or a publish's). */
  id: string;
  /** When the holder process started. */
  startedAt: string;
}

export interface WatchStatus {
  /** Format of this file; bumped on an incompatible change. */
  version: 1;
  pid: number;
  out: string;
  db: string;
  intervalSeconds: number;
  startedAt: string;
  /** running: a cycle is in progress; idle: waiting for the next tick; stopped: the watcher exited. */
  state: 'running' | 'idle' | 'stopped';
  updatedAt: string;
  /** Cycles started since the watcher started. */
  cycles: number;
  consecutiveFailures: number;
  lastSuccessAt: string | null;
  lastFailureAt: string | null;
  /** The last finished cycle (success or failure). */
  lastCycle: CycleStatus | null;
  /** The last successful cycle: its counts describe what is published now. */
  lastSuccess: CycleStatus | null;
  nextCycleAt: string | null;
  exec: {
    command: string;
    running: boolean;
    runs: number;
    consecutiveFailures: number;
    lastExitCode: number | null;
    lastFinishedAt: string | null;
  } | null;
  /** `--publish`: the bucket kept in step with the tree (see watch/publisher.ts). */
  publish: PublishStatus | null;
  /** `--publish`: the main thread's progress, which its leases' renewals require (`--stall-timeout`). */
  stall: StallStatus | null;
}

/** The `stall` block: how long since the main thread last made progress, and why it stalled once it has. */
export interface StallStatus {
  timeoutSeconds: number;
  /** Since its last progress: rows read, a cycle's start or end, a publish's progress, its sleep between cycles. */
  secondsSinceProgress: number;
  /** Set as the watcher exits 13, its main thread stalled past the timeout (kind `stalled`). */
  error: CycleStatus['error'];
}

function statusPath(outDir: string): string {
  return join(outDir, STATUS_FILE);
}

/** Replaces the status file atomically. Throws on failure (the caller logs it; it is never fatal). */
export function writeStatus(outDir: string, status: WatchStatus): void {
  replaceFileWith(outDir, statusPath(outDir), `${JSON.stringify(status, null, 2)}\n`);
}

/** The status file, or undefined when there is none (or it is unreadable). */
export function readStatus(outDir: string): WatchStatus | undefined {
  try {
    return JSON.parse(readFileSync(statusPath(outDir), 'utf8')) as WatchStatus;
  } catch {
    return undefined;
  }
}
