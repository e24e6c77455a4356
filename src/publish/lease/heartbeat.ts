/**
 * The renewal thread's half of the stall guard (the watcher's half, which installs it, is
 * watch/stall-guard.ts). A process whose main thread stalls lets its leases go (`watch --stall-timeout`). The renewal thread
 * (keeper.ts) renews leases whatever the main thread does, so that a long build never loses
 * one; alone, it would keep a hung leader's lease as long as the process lives, and a supervisor
 * restarts only processes that end.
 *
 * So the main thread beats a heartbeat in shared memory whenever it makes progress (the watcher:
 * rows read, a cycle's start and end, a publish's progress arriving, its sleep between cycles
 * ticking); a blocked event loop, or an await that never resolves, does not beat. Before each
 * renewal, the renewal thread looks at it: once it is older than the timeout, that lease and every
 * other is renewed no more (it lapses within a TTL of the last renewal), and, since the main thread
 * may never run again, the renewal thread ends the process itself:
 *
 *   1. it writes the reason on stderr;
 *   2. it asks the main thread, through Node's inspector, to run the stall hook, which records the
 *      stall (the watcher's status file) and exits 13. The inspector's requests reach the main
 *      thread as V8 interrupts, served even in the middle of a busy loop or an Atomics.wait;
 *   3. a main thread stuck where no JavaScript runs (a native call that never returns) serves no
 *      interrupt: after a grace period the renewal thread kills the process (SIGKILL).
 */
import { writeSync } from 'node:fs';
import { Session } from 'node:inspector';
import { ExitCode, stalledError, type SnapshotError } from '../../core/errors.js';
import { monotonicMs, type StallHandoff } from './keeper.js';

/** How long the main thread has to answer the stall hook before the process is killed. */
const EXIT_GRACE_MS = 5_000;
/** The stall hook on the main thread's global object, where the inspector's evaluation finds it. */
export const STALL_HOOK = 'profile-snapshot.stalled';

/** The main thread's progress, in shared memory: its last progress (monotonicMs) and the cycle it was in. */
export class Heartbeat {
  private readonly at: BigInt64Array;
  /** [cycle number, 1 while in that cycle, 0 once it ended]. */
  private readonly cycle: Int32Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(16)) {
    this.at = new BigInt64Array(buffer, 0, 1);
    this.cycle = new Int32Array(buffer, 8, 2);
  }

  /** The main thread made progress now. */
  beat(): void {
    Atomics.store(this.at, 0, BigInt(Math.floor(monotonicMs() * 1000)));
  }

  /** A cycle starts (`running`) or ends: progress, and what a stall's message names. */
  cycleAt(number: number, running: boolean): void {
    Atomics.store(this.cycle, 0, number);
    Atomics.store(this.cycle, 1, running ? 1 : 0);
    this.beat();
  }

  /** Milliseconds since the last progress. */
  get sinceMs(): number {
    return monotonicMs() - Number(Atomics.load(this.at, 0)) / 1000;
  }

  /** Where the main thread was at its last progress, in words. */
  get where(): string {
    const number = Atomics.load(this.cycle, 0);
    if (number === 0) return 'before its first cycle';
    return Atomics.load(this.cycle, 1) === 1 ? `in cycle ${number}` : `after cycle ${number}`;
  }
}

/** In the renewal thread: the main thread's heartbeat, asked before each renewal. */
export class StallWatch {
  private readonly heartbeat: Heartbeat;
  private stalled: SnapshotError | undefined;

  constructor(private readonly guard: StallHandoff) {
    this.heartbeat = new Heartbeat(guard.heartbeat);
  }

  /** Undefined while the main thread makes progress; past the timeout, the stall, and the process is ended (once). */
  check(): SnapshotError | undefined {
    if (this.stalled !== undefined) return this.stalled;
    const sinceMs = this.heartbeat.sinceMs;
    if (sinceMs <= this.guard.timeoutMs) return undefined;
    this.stalled = stalledError(
      `the watcher's main thread made no progress for ${(sinceMs / 1000).toFixed(1)} s, ${this.heartbeat.where} ` +
        `(--stall-timeout ${this.guard.timeoutMs / 1000} s): it renews its leases no more, so that a standby takes over ` +
        `within a lease TTL, and exits ${ExitCode.stalled}`,
      'let the supervisor restart it (systemd: Restart=on-failure or always); if its cycles legitimately go longer ' +
        'than that without progress (a store locked by a long write transaction), raise --stall-timeout',
    );
    endProcess(this.stalled);
    return this.stalled;
  }
}

/** Says why on stderr, asks the main thread to exit 13, and kills the process if it cannot. */
function endProcess(error: SnapshotError): void {
  // The watcher's log line, as the main thread would have written it.
  writeSync(2, `${new Date().toISOString()} profile-snapshot watch: STALLED: ${error.message}. Fix: ${error.hint}.\n`);
  const hook = `globalThis[Symbol.for(${JSON.stringify(STALL_HOOK)})]?.(${JSON.stringify(error.message)}, ${JSON.stringify(error.hint)})`;
  try {
    const session = new Session();
    session.connectToMainThread();
    session.post('Runtime.evaluate', { expression: hook });
  } catch {
    // No inspector in this build of Node (or a permission model forbids it): the kill below.
  }
  setTimeout(() => {
    writeSync(
      2,
      `${new Date().toISOString()} profile-snapshot watch: the main thread did not exit within ${EXIT_GRACE_MS / 1000} s (blocked outside JavaScript): killing the process (SIGKILL)\n`,
    );
    process.kill(process.pid, 'SIGKILL');
  }, EXIT_GRACE_MS);
}
