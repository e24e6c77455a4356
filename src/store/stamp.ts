/**
 * A stamp of the store's files that changes whenever a write commits, so a build can tell, without
 * reading a row, that the store is exactly as it was at the last build (then there is nothing to do).
 *
 * What it covers, and why that is every commit:
 * - rollback-journal mode: each commit bumps the change counter in the database header (bytes 24-27),
 *   which is what SQLite itself checks to know its page cache is stale;
 * - WAL mode: each commit appends frames to the -wal file (its size grows) or, after a checkpoint,
 *   restarts it with new salts in its header; a checkpoint then rewrites the database file;
 * - anything else (a file replaced, restored, copied over): inode, size, mtime and ctime.
 * The -wal file's ctime is left out: SQLite re-owns that file whenever a connection opens it as root,
 * which moves its ctime without a write.
 *
 * Like racy-git, a stamp only vouches for an unchanged store when the files were last modified at
 * least `settleMs` before it was taken (`settled`): a change landing in the same timestamp tick as an
 * earlier one leaves the times as they were, and a change made outside SQLite (a file copied over in
 * place) may keep the size and the header too. A pass records its stamp even when it is not settled
 * yet (a store written moments before the build): the next build trusts that record once its own
 * stamp is settled and still the same. Nothing moved in between: every commit changes bytes the
 * stamp reads (the header's change counter, or the -wal file's size or salts), whatever the clock.
 */
import { openSync, readSync, statSync, type BigIntStats } from 'node:fs';
import { fingerprint } from '../core/hash.js';

/** Files modified more recently than this before the stamp are not trusted to show every change. */
export const STORE_SETTLE_MS = 2000;

export interface StoreStamp {
  /** Changes with every commit to the store. */
  value: string;
  /** Whether the files were left alone for the settling time when it was taken: only then may it vouch. */
  settled: boolean;
}

export function storeStamp(file: string, options: { nowMs?: number; settleMs?: number } = {}): StoreStamp {
  const nowNs = BigInt(Math.floor(options.nowMs ?? Date.now())) * 1_000_000n;
  const settleNs = BigInt(options.settleMs ?? STORE_SETTLE_MS) * 1_000_000n;
  const parts: string[] = [];
  let settled = true;
  for (const [path, headerBytes, withCtime] of [
    [file, 100, true],
    [`${file}-wal`, 32, false],
  ] as const) {
    const stats = statIfPresent(path);
    if (stats === undefined) {
      parts.push('none');
      continue;
    }
    const ctimeNs = withCtime ? stats.ctimeNs : 0n;
    const changedNs = stats.mtimeNs > ctimeNs ? stats.mtimeNs : ctimeNs;
    if (changedNs > nowNs - settleNs) settled = false;
    parts.push(`${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${ctimeNs}:${header(path, stats.ino, headerBytes)}`);
  }
  return { value: fingerprint(parts.join('|')), settled };
}

function statIfPresent(path: string): BigIntStats | undefined {
  try {
    return statSync(path, { bigint: true });
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw cause;
  }
}

/**
 * Bytes that change with every commit, at once, whatever the clock: the database header (its change
 * counter, in rollback-journal mode) and, in WAL mode, the wal-index header at the start of the -shm
 * file, whose change counter and last valid frame move with each commit. Two equal marks taken
 * around the moments read transactions began prove they all began on the same snapshot (a pass
 * shared between connections relies on it, see pass/threads.ts). Unlike `storeStamp` it needs no
 * settling time, and it is only meaningful while a connection holds the store open.
 */
export function commitMark(file: string): string {
  const parts: string[] = [];
  for (const [path, bytes] of [
    [file, 100],
    [`${file}-shm`, WAL_INDEX_HEADER_BYTES],
  ] as const) {
    const stats = statIfPresent(path);
    parts.push(stats === undefined ? 'none' : `${stats.ino}:${header(path, stats.ino, bytes)}`);
  }
  return parts.join('|');
}

/**
 * Descriptors of the store's files, kept open for the process's life: closing any descriptor of a
 * file drops every POSIX lock the process holds on it, SQLite's own included (its locks on the
 * database and the -shm's), so a file SQLite may have open in this process is never opened and
 * closed again here. One per path and inode: a file replaced gets a new one, and the old one stays
 * open (SQLite may still be reading the old file under its locks).
 */
const heldOpen = new Map<string, { ino: bigint; fd: number }>();

/** The first bytes of the file at `path` (inode `ino`), hex (fewer when the file is shorter). */
function header(path: string, ino: bigint, length: number): string {
  let held = heldOpen.get(path);
  if (held === undefined || held.ino !== ino) {
    held = { ino, fd: openSync(path, 'r') };
    heldOpen.set(path, held);
  }
  const bytes = Buffer.alloc(length);
  const read = readSync(held.fd, bytes, 0, length, 0);
  return bytes.subarray(0, read).toString('hex');
}

/**
 * The wal-index header, two copies of its 48 bytes (sqlite's wal.c). The checkpoint info after them
 * is left out: a reader writes its read mark there when its transaction begins.
 */
const WAL_INDEX_HEADER_BYTES = 96;
