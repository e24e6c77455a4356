/**
 * A long-lived process (the watcher) builds the same out dir again and again: the manifest it wrote
 * last is kept in memory and reused as long as the file on disk is exactly that one (same inode,
 * size and mtime), which saves parsing a line per profile every cycle. Owned by whoever lives that
 * long (the watcher's store session) and handed to each build: nothing is kept between the builds
 * of a process that holds none.
 */
import { manifestStamp, readManifest, type Manifest } from './manifest.js';

export class ManifestCache {
  private entry: { outDir: string; stamp: string; manifest: Manifest } | undefined;

  /** The cached manifest of `outDir` if the file still matches it; the cache is emptied either way. */
  take(outDir: string): Manifest | undefined {
    const entry = this.entry;
    this.entry = undefined;
    if (entry === undefined || entry.outDir !== outDir) return undefined;
    return entry.stamp === manifestStamp(outDir) ? entry.manifest : undefined;
  }

  /** Reads the manifest of `outDir` into the cache now, unless it holds it already. */
  prime(outDir: string): void {
    const stamp = manifestStamp(outDir);
    if (stamp === undefined || (this.entry?.outDir === outDir && this.entry.stamp === stamp)) return;
    const manifest = readManifest(outDir);
    // Kept only if the file did not change while it was read.
    this.entry = manifestStamp(outDir) === stamp ? { outDir, stamp, manifest } : undefined;
  }

  keep(outDir: string, manifest: Manifest): void {
    const stamp = manifestStamp(outDir);
    this.entry = stamp === undefined ? undefined : { outDir, stamp, manifest };
  }

  forget(): void {
    this.entry = undefined;
  }
}
