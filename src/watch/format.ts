/**
 * One line per cycle, built from the cycle's status record, so the watcher's log and `regenerate`
 * print the same words. Pure functions: the CLI decides where the lines go.
 */
import { count, summaryCounts } from '../core/text.js';
import type { CycleStatus, PublishProgressStatus, PublishStatus } from './status.js';

/** " (3 in a row)" after a failure that is not the first in a row; nothing after the first. */
export const streak = (failures: number): string => (failures > 1 ? ` (${failures} in a row)` : '');

/** A failure as the log prints it: its message, then the fix when it has one. */
export function failureText(error: { message: string; hint: string | null } | null | undefined): string {
  return `${error?.message ?? 'unknown error'}${error?.hint ? `. Fix: ${error.hint}` : ''}`;
}

/** e.g. "cycle 7: 18 profiles published (14 creators), 6 skipped; files 2 written, 39 unchanged, 0 removed; 12 warnings; 0.05 s" */
export function formatCycle(cycle: CycleStatus, consecutiveFailures = 0): string {
  const seconds = `${(cycle.durationMs / 1000).toFixed(2)} s`;
  if (!cycle.ok) {
    return (
      `cycle ${cycle.number} FAILED${streak(consecutiveFailures)}: ${failureText(cycle.error)}; ` +
      `the last good output is kept; ${seconds}`
    );
  }
  const files = cycle.files ?? { written: 0, unchanged: 0, removed: 0 };
  const fallback = cycle.changes?.clockFallback
    ? `; ${cycle.changes.clockFallback}: ${cycle.changes.by === 'every row' ? 'read' : 'compared'} the whole store`
    : '';
  return `cycle ${cycle.number}: ${cycle.changed ? '' : 'no change; '}${summaryCounts({ ...cycle, files })}${fallback}; ${seconds}`;
}

/** e.g. "leader of the prefix (host a, pid 12)" or "standby: host b, pid 34 leads (lease renewed 3 s ago)" */
export function formatRole(status: Pick<PublishStatus, 'role' | 'leader' | 'leaseAgeSeconds'>): string {
  const holder = status.leader === null ? 'an unknown watcher' : `host ${status.leader.host}, pid ${status.leader.pid}`;
  if (status.role === 'leader') return `leader of the prefix (${holder}): this watcher publishes`;
  const age = status.leaseAgeSeconds === null ? '' : ` (lease renewed ${status.leaseAgeSeconds} s ago)`;
  return `standby: ${holder} leads${age}; this watcher builds and takes over when the leader stops`;
}

/**
 * e.g. "publishing cycle 1's tree: 120,345 of 2,000,004 objects uploaded (6%), 95.2 MB, about 4 min left".
 * Of a progress as PublishPace reports it; "compare" lists the prefix before anything is uploaded.
 */
export function formatPublishProgress(progress: PublishProgressStatus): string {
  const { phase, done, total } = progress;
  const share = total > 0 ? ` (${Math.floor((done / total) * 100)}%)` : '';
  const left = progress.etaSeconds === null ? '' : `, ${aboutLeft(progress.etaSeconds)}`;
  const what =
    phase === 'prepare'
      ? "reading the tree and the bucket's record"
      : phase === 'compare'
        ? `comparing with the bucket: ${count(done)} of about ${count(total)} objects listed`
        : `${count(done)} of ${count(total)} objects ${phase === 'upload' ? 'uploaded' : 'deleted'}${share}, ${megabytes(progress.bytes)}${left}`;
  return `publishing cycle ${progress.cycle}'s tree: ${what}`;
}

const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

function aboutLeft(seconds: number): string {
  if (seconds < 90) return `about ${Math.max(1, Math.round(seconds))} s left`;
  return `about ${Math.round(seconds / 60)} min left`;
}
