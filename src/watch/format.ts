/**
 * One line per cycle, built from the cycle's status record, so the watcher's log and `regenerate`
 * print the same words. Pure functions: the CLI decides where the lines go.
 */
import { summaryCounts } from '../core/text.js';
import type { CycleStatus, PublishStatus } from './status.js';

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
  return `cycle ${cycle.number}: ${cycle.changed ? '' : 'no change; '}${summaryCounts({ ...cycle, files })}; ${seconds}`;
}

/** e.g. "leader of the prefix (host a, pid 12)" or "standby: host b, pid 34 leads (lease renewed 3 s ago)" */
export function formatRole(status: Pick<PublishStatus, 'role' | 'leader' | 'leaseAgeSeconds'>): string {
  const holder = status.leader === null ? 'an unknown watcher' : `host ${status.leader.host}, pid ${status.leader.pid}`;
  if (status.role === 'leader') return `leader of the prefix (${holder}): this watcher publishes`;
  const age = status.leaseAgeSeconds === null ? '' : ` (lease renewed ${status.leaseAgeSeconds} s ago)`;
  return `standby: ${holder} leads${age}; this watcher builds and takes over when the leader stops`;
}
