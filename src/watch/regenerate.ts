/**
 * Asking a running watcher for a cycle now: find it through the out dir's lock, send it SIGHUP, and
 * wait for a cycle that started after the signal to finish. "After" is decided on the host's monotonic
 * clock (the status records each cycle's start on it), so a cycle already under way when the signal
 * arrived never counts as the answer.
 */
import { describeHolder, OutDirLock, type LockHolder } from '../output/lock.js';
import { outputError } from '../core/errors.js';
import { readStatus, type CycleStatus, type PublishStatus } from './status.js';
import { FULL_CYCLE_REQUEST_FILE, resolveOutDir } from '../core/layout.js';
import { replaceFileWith } from '../output/folders.js';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

export interface RegenerateResult {
  holder: LockHolder;
  cycle: CycleStatus;
  consecutiveFailures: number;
  /** `watch --publish`: the watcher's publishing, its role among watchers of the prefix included. */
  publish: PublishStatus | null;
}

/**
 * `full`: the cycle reads every row and heals the tree (as `build --full`): asked for through a file
 * in the state folder, which the watcher removes once such a cycle succeeded.
 */
export async function regenerate(
  outDir: string,
  options: { timeoutMs: number; pollMs?: number; full?: boolean },
): Promise<RegenerateResult> {
  const out = resolveOutDir(outDir);
  const holder = OutDirLock.holderOf(out);
  if (holder === undefined) {
    throw outputError(
      `no watcher is running for ${out}`,
      `start one with "profile-snapshot watch --out ${outDir}", or run "profile-snapshot build --out ${outDir}" once`,
    );
  }
  if (holder.command !== 'watch') {
    // SIGHUP would kill a build: never send it to anything but a watcher.
    throw outputError(
      `${out} is locked by ${describeHolder(holder)}, not by a watcher`,
      'that build brings the tree up to date when it finishes; run "profile-snapshot build" again after it if needed',
    );
  }
  if (options.full) replaceFileWith(out, join(out, FULL_CYCLE_REQUEST_FILE), `${new Date().toISOString()}\n`);
  const requestedAt = process.hrtime.bigint();
  try {
    process.kill(holder.pid, 'SIGHUP');
  } catch (cause) {
    throw outputError(`cannot signal the watcher (pid ${holder.pid})`, 'run regenerate as the user that runs the watcher', cause);
  }
  const deadline = performance.now() + options.timeoutMs;
  for (;;) {
    const status = readStatus(out);
    const cycle = status?.pid === holder.pid ? status.lastCycle : null;
    if (status && cycle && BigInt(cycle.startedMonoNs) > requestedAt) {
      return { holder, cycle, consecutiveFailures: status.consecutiveFailures, publish: status.publish };
    }
    if (OutDirLock.holderOf(out)?.token !== holder.token) {
      throw outputError(`the watcher (pid ${holder.pid}) stopped before finishing the cycle`, 'see its log; start it again');
    }
    if (performance.now() >= deadline) {
      throw outputError(
        `the watcher (pid ${holder.pid}) did not finish a cycle within ${options.timeoutMs / 1000} s`,
        'see its log and its status file; a very large store may need a longer --timeout',
      );
    }
    await new Promise((r) => setTimeout(r, options.pollMs ?? 50));
  }
}
