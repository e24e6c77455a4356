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
 * Like racy-git, a stamp is only trusted when the files were last modified at least `settleMs`
 * before it was taken: a write landing in the same timestamp tick as the stamp could otherwise leave
 * size, times and (in WAL mode after a checkpoint) headers looking the same.
 */
import { closeSync, openSync, readSync, statSync, type BigIntStats } from 'node:fs';
import { fingerprint } from '../render/fingerprint.js';

/** Files modified more recently than this before the stamp are not trusted to show every change. */
export const STORE_SETTLE_MS = 2000;

/** The stamp, or undefined when the store's files changed too recently to be told apart. */
export function storeStamp(file: string, options: { nowMs?: number; settleMs?: number } = {}): string | undefined {
  const nowNs = BigInt(Math.floor(options.nowMs ?? Date.now())) * 1_000_000n;
  const settleNs = BigInt(options.settleMs ?? STORE_SETTLE_MS) * 1_000_000n;
  const parts: string[] = [];
  for (const [path, headerBytes, withCtime] of [[file, 100, true], [`${file}-wal`, 32, false]] as const) {
    const stats = statIfPresent(path);
    if (stats === undefined) {
      parts.push('none');
      continue;
    }
    const ctimeNs = withCtime ? stats.ctimeNs : 0n;
    const changedNs = stats.mtimeNs > ctimeNs ? stats.mtimeNs : ctimeNs;
    if (changedNs > nowNs - settleNs) return undefined;
    parts.push(`${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${ctimeNs}:${header(path, headerBytes)}`);
  }
  return fingerprint(parts.join('|'));
}

function statIfPresent(path: string): BigIntStats | undefined {
  try {
    return statSync(path, { bigint: true });
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw cause;
  }
}

/** The file's first bytes, hex (fewer when the file is shorter). */
function header(path: string, length: number): string {
  const fd = openSync(path, 'r');
  try {
    const bytes = Buffer.alloc(length);
    const read = readSync(fd, bytes, 0, length, 0);
    return bytes.subarray(0, read).toString('hex');
  } finally {
    closeSync(fd);
  }
}
