/**
 * A long-lived process (the watcher) builds the same out dir again and again: the manifest it wrote
 * last is kept and reused as long as the file on disk is exactly that one (same inode, size and
 * mtime), which saves parsing a line per profile every cycle. What is kept of a manifest this
 * process wrote is where its profile lines are (WrittenManifest), read back as bytes when taken.
 * Owned by whoever lives that long (the watcher's store session) and handed to each build: nothing
 * is kept between the builds of a process that holds none.
 */
import type { EntryTable, RetiredTable } from './entry-table.js';
import { manifestStamp, readManifest, WrittenManifest, type Manifest } from './manifest.js';

export class ManifestCache {
  private entry: { outDir: string; stamp: string; manifest: Manifest | WrittenManifest } | undefined;
  /** The memory of a retired table, for the next one to be read and noted into. */
  private spare: RetiredTable | undefined;

  /** The cached manifest of `outDir` if the file still matches it; the cache is emptied either way. */
  take(outDir: string): Manifest | undefined {
    const entry = this.entry;
    this.entry = undefined;
    if (entry === undefined || entry.outDir !== outDir || entry.stamp !== manifestStamp(outDir)) return undefined;
    if (!(entry.manifest instanceof WrittenManifest)) return entry.manifest;
    const spare = this.spare;
    this.spare = undefined; // the table read now owns it
    try {
      return entry.manifest.read(spare);
    } catch {
      return undefined; // read from disk instead
    }
  }

  /** Reads the manifest of `outDir` into the cache now, unless it holds it already. */
  prime(outDir: string): void {
    const stamp = manifestStamp(outDir);
    if (stamp === undefined || (this.entry?.outDir === outDir && this.entry.stamp === stamp)) return;
    const manifest = readManifest(outDir);
    // Kept only if the file did not change while it was read.
    this.entry = manifestStamp(outDir) === stamp ? { outDir, stamp, manifest } : undefined;
  }

  /**
   * Keeps what a build committed. `done` is the table that build read (its last manifest's lines):
   * once a WrittenManifest replaces it, nothing reads it any more, and its memory is kept for the
   * next table. (A build that wrote no manifest keeps its manifest as it is, that table included.)
   */
  keep(outDir: string, manifest: Manifest | WrittenManifest, done?: EntryTable): void {
    const stamp = manifestStamp(outDir);
    this.entry = stamp === undefined ? undefined : { outDir, stamp, manifest };
    if (manifest instanceof WrittenManifest) this.spare = done?.retire() ?? this.spare;
  }

  forget(): void {
    this.entry = undefined;
  }
}
