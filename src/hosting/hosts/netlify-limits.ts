/**
 * Netlify's per-folder limit. "While Netlify doesn't have a limit on the number of files per deploy,
 * we do have a limit of 54,000 files per directory. If any directory within your publish directory
 * has more than 54,000 files, your deploys will fail." (docs.netlify.com/site-deploys/overview).
 * Profiles live in flat users folders, so this caps a Netlify deploy near 54,000 published profiles.
 * The Netlify build command checks the snapshot after building: past the limit the build fails with
 * a clear message (the live site keeps its previous deploy, never a broken one); near it, a warning.
 */
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describeCause, outputError } from '../../core/errors.js';
import { count } from '../../core/text.js';

export const NETLIFY_MAX_FILES_PER_DIR = 54_000;
/**
 * `verify --netlify` and `netlify check` count every folder's files and warn from 90 % of the limit:
 * time to plan the move before deploys start failing.
 */
export const NETLIFY_WARN_FILES_PER_DIR = 48_600;
/**
 * `build` (and each watch cycle) counts published profiles, one file per profile in each users
 * folder, and warns past 50,000 (issue 5): a round figure an operator can remember, still 4,000
 * profiles short of failing deploys.
 */
export const BUILD_NOTICE_PROFILES_PER_DIR = 50_000;

export interface FolderCount {
  dir: string;
  entries: number;
}
export interface LimitReport {
  over: FolderCount[];
  near: FolderCount[];
  largest: FolderCount | undefined;
}

/**
 * Counts the entries of every folder of the publish dir (dot folders are skipped: Netlify does not
 * deploy them, and they hold the tool's own bookkeeping).
 */
export function checkNetlifyLimits(outDir: string): LimitReport {
  const counts: FolderCount[] = [];
  const walk = (dir: string) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (cause) {
      throw outputError(
        `cannot read ${dir}: ${describeCause(cause)}`,
        'build the snapshot first (profile-snapshot build --out <dir>)',
        cause,
      );
    }
    const visible = entries.filter((e) => !e.name.startsWith('.'));
    counts.push({ dir: relative(outDir, dir) || '.', entries: visible.length });
    for (const e of visible) if (e.isDirectory()) walk(join(dir, e.name));
  };
  walk(outDir);
  counts.sort((a, b) => b.entries - a.entries);
  return { ...classifyFolders(counts), largest: counts[0] };
}

/** The folders over Netlify's limit (a deploy fails) and those near it (warn), of counted folders. */
export function classifyFolders(counts: readonly FolderCount[]): { over: FolderCount[]; near: FolderCount[] } {
  return {
    over: counts.filter((c) => c.entries > NETLIFY_MAX_FILES_PER_DIR),
    near: counts.filter((c) => c.entries <= NETLIFY_MAX_FILES_PER_DIR && c.entries >= NETLIFY_WARN_FILES_PER_DIR),
  };
}

/** The warning for a folder near the limit, worded the same wherever it is reported. */
export function nearLimitMessage(folder: FolderCount): string {
  return `${folder.dir} holds ${count(folder.entries)} files, near Netlify's limit of ${count(NETLIFY_MAX_FILES_PER_DIR)} per folder`;
}
