/**
 * A pinned generation of the tree: one committed tree that a slow reader (the watcher's publish,
 * which may span many of the watcher's own commits) keeps reading while later commits go on.
 *
 * Pinning copies nothing. The pin is a folder, PIN_DIR, laid out like the out dir. Taking it links
 * the generation's own bookkeeping there (the manifest and the list variant's index, read once);
 * from then on every commit first hard-links each document it is about to replace or remove into
 * the pin, unless the pin holds that path already (a commit in the middle of the pin's life must
 * not replace the pinned generation's file with a later one). So the pin costs one link per file a
 * commit changes, and the pinned generation is, path by path: the pin's file when there is one,
 * else the out dir's, which no commit has touched since.
 *
 * A reader opens the out dir's path, then looks at the pin's: a commit links into the pin before it
 * renames over or removes the out dir's path, so when the pin has no file there after the open, the
 * file opened is still the pinned generation's; when it has one, that one is. Most paths are never
 * pinned, so the look is a stat that finds nothing (an open that fails would throw, and the error's
 * stack costs more than the read); a path the out dir no longer has is then opened in the pin.
 *
 * Only the holder of the out dir's lock pins, and only between two of its commits (a commit is
 * synchronous: nothing else runs on the thread meanwhile). A pin left by a process that died is
 * removed by the lock's next holder (lock.ts).
 */
import { closeSync, existsSync, linkSync, lstatSync, mkdirSync, openSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CREATORS_GZIP_INDEX_FILE, MANIFEST_FILE, PIN_DIR } from '../core/layout.js';
import { guard, linkOrCopy } from './folders.js';

/** Where a publish reads a tree: its bookkeeping under `root`, its documents through `open`. */
export interface TreeReader {
  /** The out dir, as messages name it. */
  readonly outDir: string;
  /** A folder laid out like the out dir holding this tree's manifest and the variant's index. */
  readonly root: string;
  /** An open descriptor of the document at `path` (relative to the out dir), or undefined when there is none. */
  open(path: string): number | undefined;
  /** Whether the tree has a document at `path`. */
  has(path: string): boolean;
}

/** The out dir as it is now: what a publish beside (not inside) the writer reads. */
export function liveTree(outDir: string): TreeReader {
  return {
    outDir,
    root: outDir,
    open: (path) => openIfPresent(join(outDir, path)),
    has: (path) => existsSync(join(outDir, path)),
  };
}

/** A generation pinned by the out dir lock's holder: read through it until `release`. */
export class TreePin implements TreeReader {
  readonly root: string;
  private released = false;

  private constructor(readonly outDir: string) {
    this.root = join(outDir, PIN_DIR);
  }

  /** Pins the tree as it is now (between two commits of this process). Replaces a pin left behind. */
  static take(outDir: string): TreePin {
    const pin = new TreePin(outDir);
    guard(`cannot pin the tree in ${outDir}`, () => {
      rmSync(pin.root, { recursive: true, force: true });
      for (const path of [MANIFEST_FILE, CREATORS_GZIP_INDEX_FILE]) {
        mkdirSync(dirname(join(pin.root, path)), { recursive: true });
        linkIfPresent(join(outDir, path), join(pin.root, path));
      }
    });
    return pin;
  }

  /**
   * The pin the out dir lock's holder took, read from another thread of the same process (the
   * watcher's publish thread): the taker alone releases it.
   */
  static attach(outDir: string): TreeReader {
    const pin = new TreePin(outDir);
    if (!existsSync(pin.root)) throw new Error(`bug: no pinned tree in ${outDir} to attach to`);
    return pin;
  }

  open(path: string): number | undefined {
    const pinned = join(this.root, path);
    const fd = openIfPresent(join(this.outDir, path));
    // Removed since the pin (kept there), or never in the tree.
    if (fd === undefined) return openIfPresent(pinned);
    if (!existsSync(pinned)) return fd;
    // Pinned: the out dir's file may already be a later commit's.
    const kept = openIfPresent(pinned);
    if (kept === undefined) return fd;
    closeSync(fd);
    return kept;
  }

  /** In this order: a commit may remove the out dir's file between the two looks, never the pin's. */
  has(path: string): boolean {
    return existsSync(join(this.outDir, path)) || existsSync(join(this.root, path));
  }

  /** Ends the pin: commits stop keeping files, and the files kept go. Idempotent. */
  release(): void {
    if (this.released) return;
    this.released = true;
    rmSync(this.root, { recursive: true, force: true });
  }
}

/**
 * For a commit: keeps each document it replaces or removes for the pin, when a pin is taken. Looked
 * up once per commit; undefined (nothing to do) when there is no pin.
 */
export class PinKeeper {
  private readonly folders = new Set<string>();

  private constructor(
    private readonly outDir: string,
    private readonly root: string,
  ) {}

  static of(outDir: string): PinKeeper | undefined {
    const root = join(outDir, PIN_DIR);
    return existsSync(root) ? new PinKeeper(outDir, root) : undefined;
  }

  /** Before `path` (relative to the out dir) is replaced or removed: the pinned generation keeps its file. */
  keep(path: string): void {
    const kept = join(this.root, path);
    if (existsSync(kept)) return;
    const from = join(this.outDir, path);
    if (!isFile(from)) return; // new since the pin: not the pinned generation's
    const folder = dirname(kept);
    if (!this.folders.has(folder)) {
      mkdirSync(folder, { recursive: true });
      this.folders.add(folder);
    }
    linkOrCopy(from, kept);
  }
}

function isFile(path: string): boolean {
  try {
    return lstatSync(path).isFile();
  } catch {
    return false;
  }
}

function linkIfPresent(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw cause;
  }
}

function openIfPresent(path: string): number | undefined {
  try {
    return openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
