/**
 * The origin's hot path: small documents of the out dir kept in memory, by name, each with the
 * identity of the file it was read from.
 *
 * Every answer still looks at the file: one lstat of its name, and a cached version is only used
 * while the name still points at the same file, unchanged (device, inode, size, modification and
 * change times). `watch` replaces a document by renaming a new file over its name, so the next lstat
 * sees another inode and the document is read again, in place of the old version (one entry per
 * name, so replaced versions never pile up): the cache never serves a version older than a fresh
 * stat shows. A version's bytes and ETag come from one read of one open descriptor, checked
 * against that descriptor's fstat, so an answer is always one whole version of the document, as
 * pinned-files.ts guarantees on serve-handler's path.
 *
 * Only what this module is sure of is answered here: a regular file up to `maxFileBytes`, or a name
 * with no file. Anything else (a directory, a symlink, a large file such as the creators list, an
 * unusual error) is left to serve-handler's path, which answers it as it always has.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, type Stats } from 'node:fs';
import { extname } from 'node:path';
import { Slabs } from './slabs.js';

/** One version of a document, with everything an answer needs. */
export interface CachedFile {
  body: Buffer;
  /** serve-handler's ETag for these bytes: `"<sha1 of extension, '-', bytes>"`, so clients' validators stay valid. */
  etag: string;
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  /** The text FileCacheOptions.extraOf rendered for this version, as Latin-1 bytes (empty without one). */
  extra: Buffer;
}

/** What a look-up found: the document, no file at all, or a case for serve-handler's path. */
export type Lookup = CachedFile | 'missing' | undefined;

export interface FileCacheOptions {
  /** Bytes of documents kept in memory at most (the oldest versions are dropped first). */
  maxBytes: number;
  /** Larger files are never read here. */
  maxFileBytes: number;
  /**
   * Text its user keeps with each version (the origin's own header lines), rendered when the version
   * is read. It is cut right after the body and counted in maxBytes: dropped with the body, in the
   * same turn, never held beyond the bound.
   */
  extraOf?: (size: number, etag: string) => string;
}

export const FILE_CACHE_DEFAULTS: FileCacheOptions = { maxBytes: 64 * 2 ** 20, maxFileBytes: 256 * 2 ** 10 };

/**
 * The kernel sets the change time on every write, rename and link: a file at a reused inode number
 * is told apart from the old one by it, or by its size.
 */
const sameFile = (entry: CachedFile, stats: Stats) =>
  entry.ino === stats.ino &&
  entry.dev === stats.dev &&
  entry.size === stats.size &&
  entry.mtimeMs === stats.mtimeMs &&
  entry.ctimeMs === stats.ctimeMs;

/** Once the cache is full, one new document in this many is kept (see FileCache.admits). */
const ADMIT_ONE_IN = 8;

/**
 * Counted per entry on top of its body and extra bytes: the entry object, its name, its ETag, the
 * views onto its two pieces, its slots in the map and the queue, as measured by the heap's and
 * buffers' totals. So many tiny files stay bounded too.
 */
const ENTRY_OVERHEAD = 704;

/** What a version counts against maxBytes. */
const weight = (entry: CachedFile) => entry.size + entry.extra.length + ENTRY_OVERHEAD;

export class FileCache {
  /** By absolute path. */
  private readonly entries = new Map<string, CachedFile>();
  /**
   * Versions in the order they were read, oldest at `head`: the eviction order. A Map's own order
   * would do, but V8 keeps deleted entries as holes at its head until it rehashes, and walking past
   * them on every eviction costs more than reading the file.
   */
  private readonly order: ({ path: string; entry: CachedFile } | undefined)[] = [];
  private head = 0;
  private bytes = 0;
  /** Room for the bodies kept and their extra bytes. */
  private readonly slabs = new Slabs();
  /** New documents turned away since the last one let in while full (see admits). */
  private missesWhileFull = 0;

  constructor(private readonly options: FileCacheOptions = FILE_CACHE_DEFAULTS) {}

  /** What the cache holds: bytes as counted against its bound, and versions (replaced ones too). */
  get held(): { bytes: number; versions: number } {
    return { bytes: this.bytes, versions: this.order.length - this.head };
  }

  /** The current version of the file at `path` (absolute, inside the out dir). */
  lookup(path: string): Lookup {
    let stats: Stats | undefined;
    try {
      // Looked at first even for a name never read: a name with no file (a miss, behind a CDN one
      // request in several) is told without the error object a failed open would build.
      stats = lstatSync(path, { throwIfNoEntry: false });
    } catch {
      return undefined;
    }
    if (stats === undefined) return 'missing';
    if (!stats.isFile() || stats.size > this.options.maxFileBytes) return undefined;
    const cached = this.entries.get(path);
    return cached !== undefined && sameFile(cached, stats) ? cached : this.read(path);
  }

  /** Reads the file once through one descriptor, and keeps that version if admits() lets it in. */
  private read(path: string): Lookup {
    let fd: number;
    try {
      // O_NOFOLLOW: a symlink (swapped in since the lstat, or never looked at) is refused: serve-handler's
      // path decides. O_NONBLOCK: opening a FIFO must not wait for a writer (fstat then turns it away).
      fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : undefined;
    }
    try {
      const stats = fstatSync(fd);
      if (!stats.isFile() || stats.size > this.options.maxFileBytes) return undefined;
      const kept = this.admits(path, stats.size);
      const body = kept ? this.slabs.cut(stats.size) : Buffer.allocUnsafe(stats.size);
      let filled = 0;
      for (let n = -1; filled < body.length && n !== 0; filled += n) n = readSync(fd, body, filled, body.length - filled, filled);
      // Shorter than its stat said: being written in place, not by rename. Not a version to keep.
      if (filled !== body.length) return undefined;
      const entry = this.version(path, body, stats, kept);
      return kept ? this.keep(path, entry) : entry;
    } finally {
      closeSync(fd);
    }
  }

  /** A version read whole: its ETag, and its extra bytes, from the slabs right after its body if it is kept. */
  private version(path: string, body: Buffer, stats: Stats, kept: boolean): CachedFile {
    const etag = `"${createHash('sha1').update(extname(path)).update('-').update(body).digest('hex')}"`;
    const text = this.options.extraOf?.(body.length, etag) ?? '';
    const extra = kept ? this.slabs.latin1(text) : Buffer.from(text, 'latin1');
    const { dev, ino, size, mtimeMs, ctimeMs } = stats;
    return { body, etag, extra, dev, ino, size, mtimeMs, ctimeMs };
  }

  /**
   * Whether a version just read is kept. Until the cache is full, every one; then a new version of a
   * document it holds (the old one is no use any more), and one new document in ADMIT_ONE_IN. The
   * misses of an origin behind a CDN walk the whole tree: a cache that let every miss in would drop
   * each document before the walk came back to it and answer nothing from memory, where letting
   * few in keeps most of what it holds for the next pass. (Its extra bytes are not rendered yet:
   * keep() counts them, and holds the bound.)
   */
  private admits(path: string, size: number): boolean {
    if (this.bytes + size + ENTRY_OVERHEAD <= this.options.maxBytes || this.entries.has(path)) return true;
    this.missesWhileFull = (this.missesWhileFull + 1) % ADMIT_ONE_IN;
    return this.missesWhileFull === 0;
  }

  /**
   * Keeps a version read. The bound counts every version the queue holds: a replaced version stays
   * counted until its turn to be dropped comes, so replacements cannot grow memory either.
   */
  private keep(path: string, entry: CachedFile): CachedFile {
    this.entries.set(path, entry);
    this.order.push({ path, entry });
    this.bytes += weight(entry);
    while (this.bytes > this.options.maxBytes && this.head < this.order.length) this.dropOldest();
    return entry;
  }

  /** Drops the oldest version read (forgetting its name too, unless a newer version replaced it). */
  private dropOldest(): void {
    const { path, entry } = this.order[this.head]!;
    this.order[this.head++] = undefined;
    this.bytes -= weight(entry);
    if (this.entries.get(path) === entry) this.entries.delete(path);
    // Reclaim the dropped slots once they are half of the queue.
    if (this.head * 2 >= this.order.length) {
      this.order.splice(0, this.head);
      this.head = 0;
    }
  }
}
