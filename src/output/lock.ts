/**
 * The out dir's lock: a pid file at `<out>/.profile-snapshot/lock` that keeps a `build` and a `watch`
 * (or two of either) from writing the same tree at once. A watcher holds it for its whole life, which
 * is also how `regenerate` finds the watcher to signal.
 *
 * The file is created complete or not at all: its content is written to a private temporary name and
 * hard-linked to `lock`, and link(2) fails if `lock` exists. So a reader never sees an empty or half
 * written lock, and of two racing processes exactly one wins.
 *
 * A lock whose holder is gone (kill -9, a crash, a reboot) is taken over. "Gone" means: no process
 * has that pid, or one does but it started at another time than the holder did (the pid was reused,
 * which is common in containers, where a restarted watcher often gets its predecessor's pid).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, lstatSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { describeCause, outputError } from '../core/errors.js';
import { prepareDir, removeEmptyFolders } from './folders.js';
import { LOCK_FILE, PIN_DIR, resolveOutDir, STATE_DIR } from '../core/layout.js';
import { releaseAllHeld } from './held-files.js';

/** What the lock file says about its holder (JSON, one object). */
export interface LockHolder {
  pid: number;
  /** Which command holds it: only a `watch` handles SIGHUP (for any other, SIGHUP would kill it). */
  command: string;
  /** ISO time the lock was taken. */
  since: string;
  host: string;
  /** The holder's start time in clock ticks since boot (Linux /proc), to detect a reused pid. */
  startTicks: string | null;
  /** Random, unique per acquisition: tells two holders with the same pid apart. */
  token: string;
}

export interface AcquireOptions {
  /** Shown to whoever finds the lock taken (e.g. "watch", "build"). */
  command: string;
  /** How long to wait for a live holder to let go before failing (exit 5). Default DEFAULT_LOCK_WAIT_MS. */
  waitMs?: number;
}

/** How long a build or a watcher waits by default for another holder of the out dir's lock. */
export const DEFAULT_LOCK_WAIT_MS = 5000;

/** Tokens of the locks this process holds, so a lock naming our own pid is recognised as ours or stale. */
const heldHere = new Set<string>();

export class OutDirLock {
  readonly outDir: string;
  readonly path: string;
  readonly holder: LockHolder;
  private released = false;
  /** The folders `acquire` created for the lock (the out dir's included when it was new). */
  private createdFolders: string[] = [];

  private constructor(outDir: string, holder: LockHolder) {
    this.outDir = outDir;
    this.path = join(outDir, LOCK_FILE);
    this.holder = holder;
  }

  /**
   * Takes the lock of `outDir` (creating the folders if needed), waiting up to `waitMs` for a live
   * holder. Synchronous, like `build`: the wait sleeps the thread. Throws an output error (exit 5)
   * naming the holder when it is still held after the wait.
   */
  static acquire(outDir: string, options: AcquireOptions): OutDirLock {
    // A public entry point (a library caller may hold the lock itself): the path is made absolute here.
    const dir = resolveOutDir(outDir);
    const waitMs = options.waitMs ?? DEFAULT_LOCK_WAIT_MS;
    // Measured on the monotonic clock: a wall clock stepped back (NTP, a VM resumed) must not stretch the wait.
    const deadline = performance.now() + waitMs;
    const holder: LockHolder = {
      pid: process.pid,
      command: options.command,
      since: new Date().toISOString(),
      host: hostname(),
      startTicks: processStartTicks(process.pid),
      token: randomBytes(12).toString('hex'),
    };
    const lock = new OutDirLock(dir, holder);
    lock.createdFolders = prepareDir(dir, join(dir, STATE_DIR));
    try {
      for (;;) {
        const other = lock.tryTake();
        if (other === undefined) {
          heldHere.add(holder.token);
          removeLeftovers(dir);
          return lock;
        }
        if (performance.now() >= deadline) throw lockedError(dir, other);
        sleepSync(Math.min(100, Math.max(1, deadline - performance.now())));
      }
    } catch (error) {
      removeEmptyFolders(lock.createdFolders); // not taken: the out dir stays as it was
      throw error;
    }
  }

  /** The current holder of `outDir`'s lock, if a live one holds it. */
  static holderOf(outDir: string): LockHolder | undefined {
    const holder = readHolder(join(outDir, LOCK_FILE));
    return holder !== undefined && isAlive(holder) ? holder : undefined;
  }

  /**
   * Checks that the lock is still ours before a cycle writes the tree. A watcher lives for days: if
   * someone removed the lock file (or the whole out dir), it is taken again; if another live process
   * holds it now, this throws (exit 5) and the caller skips the cycle.
   */
  verify(): void {
    if (this.released) throw new Error('bug: lock already released');
    const current = readHolder(this.path);
    if (current?.token === this.holder.token) return;
    prepareDir(this.outDir, join(this.outDir, STATE_DIR));
    const other = this.tryTake();
    if (other !== undefined) throw lockedError(this.outDir, other);
  }

  /**
   * Removes the lock file if it is still ours. Idempotent. With `removeCreatedFolders` (a build that
   * failed), the folders `acquire` created go too while empty, so a new out dir is left as it was.
   */
  release(options: { removeCreatedFolders?: boolean } = {}): void {
    if (this.released) return;
    this.released = true;
    heldHere.delete(this.holder.token);
    try {
      if (readHolder(this.path)?.token === this.holder.token) {
        releaseAllHeld(this.outDir); // while still the holder: the next one may hold files of its own
        unlinkSync(this.path);
      }
    } catch {
      // Already gone (the out dir was removed): nothing to release.
    }
    if (options.removeCreatedFolders) removeEmptyFolders(this.createdFolders);
  }

  /** One attempt: undefined when we now hold the lock, else the live holder in the way. */
  private tryTake(): LockHolder | undefined {
    for (let attempt = 0; attempt < 50; attempt++) {
      if (this.linkIn(this.path)) return undefined;
      const current = readHolder(this.path);
      // Unreadable (garbage: a lock is only ever created whole) or gone: clear it; dead: take over.
      if (current !== undefined && isAlive(current)) return current;
      this.takeOver(current);
    }
    const current = readHolder(this.path);
    throw outputError(
      `cannot take the lock ${this.path}${current ? ` (held by ${describeHolder(current)})` : ''}`,
      'remove that file if no profile-snapshot process is using the out dir',
    );
  }

  /** Creates `target` with our content, atomically; false if it already exists. */
  private linkIn(target: string): boolean {
    const temporary = `${this.path}.${this.holder.token}.tmp`;
    try {
      writeFileSync(temporary, `${JSON.stringify(this.holder)}\n`);
      try {
        linkSync(temporary, target);
        return true;
      } catch (cause) {
        if ((cause as NodeJS.ErrnoException).code === 'EEXIST') return false;
        throw cause;
      } finally {
        unlinkSync(temporary);
      }
    } catch (cause) {
      throw outputError(
        `cannot create the lock ${target}: ${describeCause(cause)}`,
        'make the out dir writable, or choose another --out',
        cause,
      );
    }
  }

  /**
   * Removes the stale (or unreadable) lock `expected`, never a lock someone has just taken. Checking
   * the file and then removing it is two steps, so the removal is serialised by a second lock,
   * `lock.takeover`, taken the same atomic way: without it, a process that judged the old lock stale
   * could remove the lock a faster racer had meanwhile taken, and two processes would both hold it.
   * A takeover lock left by a process killed in those few lines is cleared once its holder is gone
   * (two processes clearing the same abandoned one at once is the one case this does not cover: it
   * needs a kill -9 inside this function and a three-way race right after).
   */
  private takeOver(expected: LockHolder | undefined): void {
    const mutex = `${this.path}.takeover`;
    if (!this.linkIn(mutex)) {
      const busy = readHolder(mutex);
      const abandoned = busy === undefined ? olderThan(mutex, 10_000) : !isAlive(busy);
      if (abandoned) removeQuietly(mutex);
      sleepSync(1 + Math.random() * 10);
      return;
    }
    try {
      // Only the takeover lock's holder removes a lock file, and a lock file is only ever created
      // where none exists: so what we read now is still there when we remove it. An absent lock is
      // left alone (a racer may be creating it this instant); the next attempt links ours in.
      if (!existsSync(this.path)) return;
      const now = readHolder(this.path);
      const unchanged = expected === undefined ? now === undefined : now?.token === expected.token;
      if (unchanged) removeQuietly(this.path);
    } finally {
      removeQuietly(mutex);
    }
  }
}

function olderThan(path: string, ms: number): boolean {
  try {
    return Date.now() - lstatSync(path).mtimeMs > ms;
  } catch {
    return false;
  }
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/**
 * A process killed while taking the lock leaves `lock.<token>.tmp` (its own content; `.stale` files
 * are from earlier versions): once we hold the lock, those naming a process that is gone are
 * removed, so kill -9 never leaves files behind for good.
 */
function removeLeftovers(outDir: string): void {
  const dir = join(outDir, STATE_DIR);
  try {
    // A pin is its holder's alone (pin.ts): one left by a process that died would keep files for nobody.
    rmSync(join(outDir, PIN_DIR), { recursive: true, force: true });
    releaseAllHeld(outDir); // as a pin, held files are their holder's alone (held-files.ts)
    for (const name of readdirSync(dir)) {
      if (!/^lock\.[0-9a-f]+\.(tmp|stale)$/.test(name)) continue;
      const path = join(dir, name);
      const holder = readHolder(path);
      // Unreadable: killed mid-write, or a live process about to write it; only old ones are dead.
      const gone = holder === undefined ? Date.now() - lstatSync(path).mtimeMs > 60_000 : !isAlive(holder);
      if (gone) unlinkSync(path);
    }
  } catch {
    // Best effort: a leftover that cannot be removed now is tried again by the next holder.
  }
}

/** "pid 1234 (profile-snapshot watch, since 2026-...)" */
export function describeHolder(holder: LockHolder): string {
  const host = holder.host === hostname() ? '' : ` on host ${holder.host}`;
  return `pid ${holder.pid}${host} (profile-snapshot ${holder.command}, since ${holder.since})`;
}

function lockedError(outDir: string, holder: LockHolder) {
  const hint =
    holder.command === 'watch'
      ? `a watcher keeps this out dir fresh already; to rebuild now run "profile-snapshot regenerate --out ${outDir}", or stop pid ${holder.pid} first`
      : `wait for pid ${holder.pid} to finish, or stop it; a lock of a dead process is taken over automatically`;
  return outputError(`out dir ${outDir} is locked by ${describeHolder(holder)}`, hint);
}

function readHolder(path: string): LockHolder | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (typeof value.pid !== 'number' || !Number.isInteger(value.pid) || value.pid <= 0 || typeof value.token !== 'string')
      return undefined;
    return {
      pid: value.pid,
      command: typeof value.command === 'string' ? value.command : 'unknown',
      since: typeof value.since === 'string' ? value.since : 'unknown',
      host: typeof value.host === 'string' ? value.host : hostname(),
      startTicks: typeof value.startTicks === 'string' ? value.startTicks : null,
      token: value.token,
    };
  } catch {
    return undefined;
  }
}

/**
 * Whether the holder is still running. The host name is not trusted to decide: a restarted container
 * usually gets a new one, and its predecessor's lock must still be taken over; the start time tells a
 * live holder from an unrelated process that happens to have its pid.
 */
function isAlive(holder: LockHolder): boolean {
  if (holder.pid === process.pid) return heldHere.has(holder.token);
  try {
    process.kill(holder.pid, 0);
  } catch (cause) {
    // EPERM: it exists but belongs to another user, so it is alive.
    if ((cause as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  if (holder.startTicks !== null) {
    const ticks = processStartTicks(holder.pid);
    if (ticks !== null && ticks !== holder.startTicks) return false; // pid reused by another process
  }
  return true;
}

/**
 * Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); null where there is no /proc.
 * The command name (field 2) may hold spaces and parentheses, so fields are counted after the last ')'.
 */
export function processStartTicks(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** Blocks this thread for `ms` (synchronous code that must wait: lock retries, verify's re-reads). */
export function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}
