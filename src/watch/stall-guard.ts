/**
 * The watcher's half of the stall guard (publish/lease/heartbeat.ts explains the whole): the main
 * thread's heartbeat, and the hook the renewal thread asks it to run, through Node's inspector, as
 * the process exits 13 for a stall.
 */
import { closeSync } from 'node:fs';
import { ExitCode, stalledError, type SnapshotError } from '../core/errors.js';
import { Heartbeat, STALL_HOOK } from '../publish/lease/heartbeat.js';
import { RenewalThread } from '../publish/lease/keeper.js';

export interface StallGuardOptions {
  timeoutMs: number;
  /** Runs on the main thread as the process exits 13 for a stall: record it (it was said on stderr already). */
  onStall(error: SnapshotError): void;
}

/**
 * On the main thread: from now on this process's leases are renewed only while the returned
 * heartbeat beats at least every `timeoutMs`; past that the process ends (exit 13). For the CLI's
 * watcher only: it ends the process.
 */
export function guardAgainstStalls(options: StallGuardOptions): Heartbeat {
  const heartbeat = new Heartbeat();
  heartbeat.beat();
  (globalThis as Record<symbol, unknown>)[Symbol.for(STALL_HOOK)] = (message: string, hint: string) => {
    try {
      options.onStall(stalledError(message, hint));
    } finally {
      // Node's inspector prints "Waiting for the debugger to disconnect..." at exit while the renewal
      // thread's session is open: the stall's reason, already written, stays the log's last line.
      try {
        closeSync(2);
      } catch {
        // Closed already: nothing to keep quiet.
      }
      process.exit(ExitCode.stalled);
    }
  };
  RenewalThread.guardAgainstStalls({ heartbeat: heartbeat.buffer, timeoutMs: options.timeoutMs });
  return heartbeat;
}
