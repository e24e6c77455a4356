/**
 * Folders, files and failures under the out dir, shared by everything that writes there (the output
 * transaction, the lock, the manifest, the last-pass record, the watcher's status): folders are
 * created only as real folders, never through a symlink below the out dir, small files are replaced
 * atomically, and filesystem errors become output errors (exit 5) with a hint.
 */
import { copyFileSync, linkSync, lstatSync, mkdirSync, renameSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describeCause, outputError, SnapshotError } from '../core/errors.js';

/** Makes `to` the same bytes as `from`: a hard link (no copy), or a copy where the filesystem has none. */
export function linkOrCopy(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch {
    copyFileSync(from, to);
  }
}

/**
 * mkdir -p inside the out dir, refusing to go through a symlink or a non-folder. Returns the folders
 * it created, outermost first (the out dir's missing parents included).
 */
export function prepareDir(outDir: string, dir: string): string[] {
  const relative = dir === outDir ? [] : dir.slice(outDir.length + 1).split(/[\\/]/);
  const created: string[] = [];
  let current = outDir;
  for (const segment of ['', ...relative]) {
    current = segment === '' ? current : join(current, segment);
    let stats;
    try {
      stats = lstatSync(current);
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw asOutputError(cause, `cannot use the out dir ${outDir}`);
      const first = guard(`cannot create ${current}`, () => mkdirSync(current, { recursive: true }));
      if (first !== undefined) created.push(...foldersFrom(first, current));
      continue;
    }
    // The out dir itself may be a symlink (the operator chose it); nothing below it may be.
    if (current !== outDir && stats.isSymbolicLink()) {
      throw outputError(`refusing to write through the symbolic link ${current}`, 'replace it with a real folder');
    }
    if (!stats.isDirectory() && !(current === outDir && stats.isSymbolicLink())) {
      throw outputError(`${current} exists and is not a folder`, 'move it away or choose another --out');
    }
  }
  return created;
}

/**
 * Replaces `file` (a path under the out dir) atomically: `write` fills a temporary file beside it,
 * which is then renamed over it, so a reader sees the old file or the new one, never part of one.
 * Its folder is made as prepareDir makes folders. When `write` fails (a full disk), or returns false
 * (nothing to write), the temporary file goes and the old file stays as it was.
 */
export function replaceFile(outDir: string, file: string, write: (temporary: string) => boolean | void): boolean {
  prepareDir(outDir, dirname(file));
  const temporary = `${file}.tmp`;
  let written: boolean | void;
  try {
    written = write(temporary);
    if (written !== false) renameSync(temporary, file);
  } catch (error) {
    removeQuietly(temporary);
    throw error;
  }
  if (written === false) removeQuietly(temporary);
  return written !== false;
}

/** replaceFile with the whole content at once. */
export function replaceFileWith(outDir: string, file: string, content: string | Uint8Array): void {
  replaceFile(outDir, file, (temporary) => writeFileSync(temporary, content));
}

function removeQuietly(file: string): void {
  try {
    rmSync(file, { force: true });
  } catch {
    // What failed is reported by the caller; a temporary file left here is replaced next time.
  }
}

/** `first` (what a recursive mkdir reports it created first) and each folder below it down to `last`. */
function foldersFrom(first: string, last: string): string[] {
  const folders = [last];
  while (folders[0] !== first && dirname(folders[0]!) !== folders[0]) folders.unshift(dirname(folders[0]!));
  return folders;
}

/** Removes each folder that is empty, innermost first; anything that holds a file stays, untouched. */
export function removeEmptyFolders(folders: readonly string[]): void {
  for (const dir of [...folders].reverse()) {
    try {
      rmdirSync(dir);
    } catch {
      // Not empty (something was published, or someone else wrote there), or gone already: kept.
    }
  }
}

export function guard<T>(what: string, action: () => T): T {
  try {
    return action();
  } catch (cause) {
    throw asOutputError(cause, what);
  }
}

export function asOutputError(cause: unknown, what: string): SnapshotError {
  if (cause instanceof SnapshotError) return cause;
  const code = (cause as NodeJS.ErrnoException).code;
  const hint =
    code === 'ENOSPC'
      ? 'free disk space, then rebuild'
      : code === 'EACCES' || code === 'EPERM' || code === 'EROFS'
        ? 'make the out dir writable, or choose another --out'
        : 'check the out dir, then rebuild';
  return outputError(`${what}: ${describeCause(cause)}`, hint, cause);
}
