/**
 * The record of the last full pass over the store: what it published, and every condition under
 * which that output is still exactly what a new pass would write. A build that finds them all
 * unchanged (same render key, same store stamp, the manifest it wrote, and a snapshot time
 * at which no published profile's accountAgeDays has moved) has nothing to do, and reads no row.
 *
 * The record is removed before a pass changes anything and written after its commit, so it never
 * vouches for a tree half-way through a change.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sameRenderKey, type RenderKey } from '../core/render-key.js';
import type { RowWarning } from '../render/user.js';
import { guard, replaceFileWith } from '../output/folders.js';
import { LAST_PASS_FILE, STATE_DIR } from '../core/layout.js';
import { manifestStamp } from '../output/manifest.js';

export interface PassConditions {
  /** What rendered the pass: tool and base URL (core/render-key.ts). */
  renderKey: RenderKey;
  /** The store's stamp, taken before the pass read its snapshot (settled or not: see store/stamp.ts). */
  store: string;
}

export interface PassResult {
  profiles: number;
  creators: number;
  skipped: number;
  /** Files the tree holds (profiles under every alias, the list, error documents, the contract). */
  files: number;
  warnings: RowWarning[];
}

export interface LastPass extends PassConditions, PassResult {
  format: 2;
  snapshotMs: number;
  /** The first snapshot time at which some published profile's accountAgeDays changes; null: never. */
  stableUntilMs: number | null;
  /** manifestStamp() right after the pass committed. */
  manifest: string;
}

/**
 * The record, when it exists and still holds for these conditions at this snapshot time. The
 * store's stamp in `conditions` must be settled: only then may an equal one vouch for the store.
 */
export function currentPass(outDir: string, conditions: PassConditions, snapshotMs: number): LastPass | undefined {
  let record: LastPass;
  try {
    record = JSON.parse(readFileSync(join(outDir, LAST_PASS_FILE), 'utf8')) as LastPass;
  } catch {
    return undefined; // none, unreadable or torn: a full pass, which writes a new one
  }
  const holds =
    record.format === 2 &&
    sameRenderKey(record.renderKey, conditions.renderKey) &&
    record.store === conditions.store &&
    record.snapshotMs <= snapshotMs &&
    (record.stableUntilMs === null || snapshotMs < record.stableUntilMs) &&
    record.manifest === manifestStamp(outDir) &&
    Array.isArray(record.warnings);
  return holds ? record : undefined;
}

export function forgetPass(outDir: string): void {
  guard(`cannot update ${join(outDir, STATE_DIR)}`, () => rmSync(join(outDir, LAST_PASS_FILE), { force: true }));
}

/**
 * Records a committed pass (atomically: a reader sees no record or this one). Best effort: the tree
 * is already published, and without a record the next build merely reads every row again.
 */
export function recordPass(outDir: string, pass: Omit<LastPass, 'format' | 'manifest'>): void {
  const manifest = manifestStamp(outDir);
  if (manifest === undefined) return;
  try {
    replaceFileWith(outDir, join(outDir, LAST_PASS_FILE), JSON.stringify({ format: 2, ...pass, manifest } satisfies LastPass));
  } catch {
    // A full disk, say: no record, and the next build merely reads every row again.
  }
}
