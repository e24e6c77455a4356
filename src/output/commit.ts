/**
 * The commit of a build: what the staging holds goes into place, what the diff left of the last
 * build goes away, and the manifest says so.
 *
 *   1. the manifest is first rewritten to claim every file about to change (so a crash leaves files
 *      the next run knows are its own);
 *   2. each staged file is renamed over its target (atomic for readers), files no longer published
 *      are removed, and the final manifest is written.
 *
 * While the out dir's lock holder has a generation pinned (pin.ts: its publish reads it), each file
 * is kept for the pin before it is replaced or removed.
 *
 * A failure part-way leaves the claims in the manifest: the next build rewrites or removes them.
 */
import { existsSync, renameSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { outputError } from '../core/errors.js';
import { PROFILE_DIRS } from '../core/layout.js';
import { asOutputError, linkOrCopy, prepareDir } from './folders.js';
import { fileEntry, fileStamp, PENDING, writeClaims, writeManifest, type Manifest, type WrittenManifest } from './manifest.js';
import { holdReplaced } from './held-files.js';
import { PinKeeper } from './pin.js';
import type { TreeDiff } from './diff.js';
import type { Staging } from './staging.js';

export interface WriteCounts {
  written: number;
  unchanged: number;
  removed: number;
}

/** Profile names and file paths a commit changes. */
interface Claims {
  profiles: readonly string[];
  files: readonly string[];
}

/**
 * Publishes everything staged and removes what is no longer published; the staging folder goes.
 * With `keep`, also returns the manifest as a watcher keeps it for its next build: as written (see
 * writeManifest), or `diff.next` when no manifest was written or it cannot be held as written.
 */
export function commitTree(
  diff: TreeDiff,
  staging: Staging,
  keep = false,
): { counts: WriteCounts; kept: Manifest | WrittenManifest | undefined } {
  const { outDir, next, previous } = diff;
  const stale: Claims = { profiles: [...previous.profiles.keys()], files: [...previous.files.keys()] };
  const counts: WriteCounts = { written: 0, unchanged: diff.unchangedFiles, removed: 0 };
  let kept: WrittenManifest | undefined;
  try {
    // Each staged profile's final entry (hash, signature, list length), put back once its files are in.
    const stagedEntries = staging.names.map((name) => next.profiles.get(name)!);
    const changing = staging.names.length + staging.files.length + stale.profiles.length + stale.files.length;
    if (changing > 0) {
      claim(diff, staging, stale);
      const keeper = PinKeeper.of(outDir);
      counts.written = moveStagedIntoPlace(diff, staging, stagedEntries, keeper);
      counts.removed = removeStale(diff, stale, keeper);
    }
    if (changing > 0 || diff.manifestChanged) kept = writeManifest(outDir, next, keep);
  } catch (cause) {
    // What was not renamed yet is of no use (the manifest, if rewritten, claims it as pending).
    staging.discard();
    throw asOutputError(cause, `cannot publish into ${outDir}`);
  }
  staging.discard();
  return { counts, kept: keep ? (kept ?? { ...next }) : undefined };
}

/**
 * Claims every file about to change before touching it: after a crash, the next run still knows
 * they are ours and rewrites or removes them. The claim is the manifest on disk (the last build's,
 * which `previous` was read from) with these files marked pending; with no manifest yet, the whole
 * new one, in plain order (pending members cannot be listed as the list's).
 */
function claim(diff: TreeDiff, staging: Staging, stale: Claims): void {
  const { outDir, next } = diff;
  for (const name of staging.names) next.profiles.set(name, PENDING);
  for (const s of staging.files) next.files.set(s.path, PENDING);
  for (const name of stale.profiles) next.profiles.set(name, PENDING);
  for (const path of stale.files) next.files.set(path, PENDING);
  prepareFolders(outDir, staging);
  const claims = { profiles: [...staging.names, ...stale.profiles], files: [...staging.files.map((s) => s.path), ...stale.files] };
  if (!writeClaims(outDir, claims)) writeManifest(outDir, { ...next, list: undefined });
}

/** Folders first: a path that cannot be used (a symlink, a file) fails before anything moves. */
function prepareFolders(outDir: string, staging: Staging): void {
  if (staging.freshDirs) {
    for (const dir of PROFILE_DIRS) {
      prepareDir(outDir, dirname(join(outDir, dir)));
      if (existsSync(join(outDir, dir)))
        throw outputError(`${join(outDir, dir)} appeared during the build`, 'rebuild; only one writer may use an out dir at a time');
    }
  } else if (staging.names.length > 0) {
    for (const dir of PROFILE_DIRS) prepareDir(outDir, join(outDir, dir));
  }
  for (const s of staging.files) prepareDir(outDir, dirname(join(outDir, s.path)));
}

/** Renames every staged document into place and records its entry; returns the files written. */
function moveStagedIntoPlace(diff: TreeDiff, staging: Staging, stagedEntries: readonly string[], keeper: PinKeeper | undefined): number {
  const { outDir, next } = diff;
  const { names, slots, freshDirs } = staging;
  let written = 0;
  // Fresh folders replace none: there were no profile folders to pin.
  freshDirs?.forEach((staged, i) => renameSync(staged, join(outDir, PROFILE_DIRS[i]!)));
  for (let i = 0; i < names.length; i++) {
    if (!freshDirs) publishProfile(outDir, names[i]!, `${staging.dir}/${slots[i]!}`, keeper);
    next.profiles.set(names[i]!, stagedEntries[i]!);
    written += PROFILE_DIRS.length;
  }
  for (const s of staging.files) {
    keeper?.keep(s.path);
    if (staging.held.has(s.path)) holdReplaced(outDir, s.path);
    renameSync(s.staged, join(outDir, s.path));
    next.files.set(s.path, fileEntry(s.hash, fileStamp(join(outDir, s.path))));
    written += 1;
  }
  return written;
}

/** The first alias gets the staged file; the others are hard links to it (same bytes, no copy). */
function publishProfile(outDir: string, name: string, staged: string, keeper: PinKeeper | undefined): void {
  const [first, ...others] = PROFILE_DIRS;
  for (const dir of PROFILE_DIRS) keeper?.keep(`${dir}/${name}`);
  for (const dir of others) {
    const link = `${staged}.${dir.length}`;
    linkOrCopy(staged, link);
    renameSync(link, `${outDir}/${dir}/${name}`);
  }
  renameSync(staged, `${outDir}/${first}/${name}`);
}

/** Removes what the last build published and this one does not; returns the files removed. */
function removeStale(diff: TreeDiff, stale: Claims, keeper: PinKeeper | undefined): number {
  const { outDir, next } = diff;
  let removed = 0;
  for (const name of stale.profiles) {
    for (const dir of PROFILE_DIRS) {
      keeper?.keep(`${dir}/${name}`);
      removed += removeIfPresent(join(outDir, dir, name));
    }
    next.profiles.delete(name);
  }
  for (const path of stale.files) {
    keeper?.keep(path);
    removed += removeIfPresent(join(outDir, path));
    next.files.delete(path);
  }
  return removed;
}

function removeIfPresent(path: string): number {
  try {
    unlinkSync(path);
    return 1;
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw cause;
  }
}
