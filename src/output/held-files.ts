/**
 * Large files a long-lived writer (the watcher) replaces every cycle, held past their replacement
 * until it writes their successors: the creators list (creators.ts), its gzip variant
 * (creators-gzip.ts) and the manifest (manifest.ts). A file removed at a commit leaves its memory
 * free until the next cycle. A virtual machine whose host takes free memory back (Linux's free page
 * reporting, as Firecracker guests have) then hands the successor's bytes memory the host must
 * supply again a page at a time, several times slower than memory just freed. Released right before
 * its successor is written (staging.ts; writeManifest for the manifest), the held file's pages are
 * free and still warm when the successor takes them. The price is disk: one more copy of each
 * between cycles.
 *
 * Held files are hard links in HELD_DIR, the lock holder's alone, like a pin (pin.ts): readers
 * never see them, and removing one never changes what a reader that has the file open reads. The
 * lock's holder removes them when it lets go of the out dir, and its next holder removes any that
 * a process killed left behind (lock.ts).
 */
import { linkSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { HELD_DIR } from '../core/layout.js';
import { prepareDir } from './folders.js';

const heldPath = (outDir: string, path: string): string => join(outDir, HELD_DIR, encodeURIComponent(path));

/** Keeps the file at `path` (relative to `outDir`), about to be replaced, until releaseHeld. */
export function holdReplaced(outDir: string, path: string): void {
  const held = heldPath(outDir, path);
  try {
    rmSync(held, { force: true });
    prepareDir(outDir, dirname(held));
    linkSync(join(outDir, path), held);
  } catch {
    // Nothing to hold (a first build), no links here, or a held folder that is not a plain one: only
    // the successor's warm memory is lost.
  }
}

/** Lets go of the file held for `path`, if any: right before its successor is written. */
export function releaseHeld(outDir: string, path: string): void {
  releaseQuietly(heldPath(outDir, path));
}

/** Lets go of every held file of `outDir`. */
export function releaseAllHeld(outDir: string): void {
  releaseQuietly(join(outDir, HELD_DIR));
}

function releaseQuietly(path: string): void {
  try {
    rmSync(path, { recursive: true, force: true });
  } catch {
    // A held file is only memory kept warm: one that cannot be removed now goes with the next holder.
  }
}
