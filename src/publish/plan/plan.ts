/**
 * What a publish does, decided before it touches anything: the tree's hashes against what is live.
 * The deletion guard is applied here too, so a refused publish changes nothing.
 */
import { SnapshotError } from '../../core/errors.js';
import { CREATORS_FILE, CREATORS_GZIP_FILE, PROFILE_DIRS } from '../../core/layout.js';
import { fileHash, type LocalTree } from './local.js';
import type { LiveSet } from './live-set.js';
import { mergeRows, PickedRows, TableBuilder, type ProfileTable } from './profile-table.js';
import { count } from '../../core/text.js';

export interface PublishPlan {
  /** Profiles to upload (each under every alias), new or changed, in name order: rows of the tree's table. */
  profiles: PickedRows;
  /** Other documents to upload, new or changed, the creators list and its variant apart. */
  files: string[];
  /** The creators list and its gzip variant (LIST_FILES), those new or changed: uploaded after every profile. */
  listFiles: string[];
  /** Profiles to delete (every alias), no longer in the tree, each with the hash it is live with: what is kept of the live rows once the plan is made. */
  deleteProfiles: ProfileTable;
  /** Documents to delete and stray keys, relative to the prefix. */
  deleteKeys: string[];
  /** Objects already live with the tree's content. */
  unchanged: number;
  /** Profile objects live before this publish (the guard's base). */
  liveProfileObjects: number;
}

const ALIASES = PROFILE_DIRS.length;

/** The creators list and its gzip variant: one step of a publish, after the profiles they name. */
export const LIST_FILES: readonly string[] = [CREATORS_FILE, CREATORS_GZIP_FILE];

export function planPublish(tree: LocalTree, live: LiveSet): PublishPlan {
  const profiles = new PickedRows(tree.profiles);
  const deleteProfiles = new TableBuilder();
  let unchanged = 0,
    liveRows = 0;
  // Both in name order: one merge, no lookup per profile; the plan's profiles come out in name order.
  // The live rows are counted as they pass: a source merged with an intent would walk them again.
  mergeRows(tree.profiles, live.profiles, {
    left: (_, row) => profiles.push(row),
    right: (table, row) => {
      liveRows++;
      deleteProfiles.addRow(table, row);
    },
    both: (_, row, table, at) => {
      liveRows++;
      if (tree.profiles.sameHash(row, table, at)) unchanged += ALIASES;
      else profiles.push(row);
    },
  });
  const plan: PublishPlan = {
    profiles,
    files: [],
    listFiles: [],
    deleteProfiles: deleteProfiles.build(),
    deleteKeys: [],
    unchanged,
    liveProfileObjects: liveRows * ALIASES,
  };
  for (const path of tree.files.keys()) {
    if (live.files.get(path) === fileHash(tree, path)) plan.unchanged++;
    else if (LIST_FILES.includes(path)) plan.listFiles.push(path);
    else plan.files.push(path);
  }
  for (const path of live.files.keys()) if (!tree.files.has(path)) plan.deleteKeys.push(path);
  // A key an interrupted publish meant to delete may be part of the tree again: uploaded, not deleted.
  for (const key of live.strays) if (!isTreeKey(tree, key)) plan.deleteKeys.push(key);
  return plan;
}

function isTreeKey(tree: LocalTree, key: string): boolean {
  const slash = key.lastIndexOf('/');
  return (
    tree.files.has(key) || ((PROFILE_DIRS as readonly string[]).includes(key.slice(0, slash)) && tree.profiles.has(key.slice(slash + 1)))
  );
}

export const uploadCount = (plan: PublishPlan) => plan.profiles.length * ALIASES + plan.files.length + plan.listFiles.length;
export const deleteCount = (plan: PublishPlan) => plan.deleteProfiles.size * ALIASES + plan.deleteKeys.length;
export const isEmptyPlan = (plan: PublishPlan) => uploadCount(plan) === 0 && deleteCount(plan) === 0;

/** Deletions allowed without --force: 10% of the live profile objects, and never fewer than 100. */
export function defaultMaxDeletes(liveProfileObjects: number): number {
  return Math.max(100, Math.floor(liveProfileObjects / 10));
}

export class DeletionGuardError extends SnapshotError {
  constructor(
    readonly deletes: number,
    readonly allowed: number,
    liveProfileObjects: number,
    where: string,
  ) {
    const share =
      liveProfileObjects > 0
        ? ` (${Math.round((deletes / liveProfileObjects) * 100)}% of the ${count(liveProfileObjects)} live profile objects)`
        : '';
    super(
      'deletionGuard',
      `refused to publish to ${where}: it would delete ${count(deletes)} objects${share}, more than the ${count(allowed)} allowed; nothing was changed`,
      { hint: `check that the store is complete; if those profiles are really gone, publish with --max-deletes ${deletes} (or --force)` },
    );
    this.name = 'DeletionGuardError';
  }
}

/** Throws (exit 7) when the plan deletes more than allowed: a truncated or wrong store must not empty the CDN. */
export function guardDeletions(
  plan: PublishPlan,
  options: { maxDeletes?: number | undefined; force?: boolean | undefined },
  where: string,
): void {
  if (options.force) return;
  const allowed = options.maxDeletes ?? defaultMaxDeletes(plan.liveProfileObjects);
  const deletes = deleteCount(plan);
  if (deletes > allowed) throw new DeletionGuardError(deletes, allowed, plan.liveProfileObjects, where);
}
