/**
 * The manifest records every file the tool wrote and a hash of its data (everything but meta). It is
 * how a rebuild knows, without re-reading a file, that a document is unchanged (keep its bytes),
 * which files are ours to replace or remove, and which belong to someone else (never touched).
 *
 * Format: a header line, then one tab-separated line per entry: `u <name> <hash>` for a profile
 * (one entry for all its alias files) and `f <path> <hash>` for any other document. The hash `-`
 * marks an entry whose file may be half-way through a commit: ours, but to be rewritten.
 */
import { readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { outputError } from '../errors.js';
import { BufferedFileWriter } from './file-writer.js';
import { MANIFEST_FILE } from './layout.js';

const HEADER = 'profile-snapshot manifest 1';
export const PENDING = '-';

export interface Manifest {
  /** lower-case username -> data hash */
  profiles: Map<string, string>;
  /** path relative to the out dir -> data hash */
  files: Map<string, string>;
}

export const emptyManifest = (): Manifest => ({ profiles: new Map(), files: new Map() });

export function readManifest(outDir: string): Manifest {
  const path = join(outDir, MANIFEST_FILE);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return emptyManifest();
    throw outputError(`cannot read the tool's manifest ${path}`, 'check the out dir\'s permissions', cause);
  }
  const lines = text.split('\n');
  if (lines[0] !== HEADER) {
    throw outputError(`unrecognised manifest ${path}`,
      `it was not written by this version of profile-snapshot; delete the out dir's ${MANIFEST_FILE} and the files it listed, then rebuild`);
  }
  const manifest = emptyManifest();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') continue;
    const a = line.indexOf('\t'), b = line.lastIndexOf('\t');
    const kind = line.slice(0, a), key = line.slice(a + 1, b), hash = line.slice(b + 1);
    if (kind === 'u') manifest.profiles.set(key, hash);
    else if (kind === 'f') manifest.files.set(key, hash);
  }
  return manifest;
}

/** Replaces the manifest atomically (temporary file, then rename), streaming it out. */
export function writeManifest(outDir: string, manifest: Manifest): void {
  const path = join(outDir, MANIFEST_FILE);
  const temporary = `${path}.tmp`;
  const out = new BufferedFileWriter(temporary);
  try {
    out.write(`${HEADER}\n`);
    for (const [key, hash] of manifest.files) out.write(`f\t${key}\t${hash}\n`);
    for (const [key, hash] of manifest.profiles) out.write(`u\t${key}\t${hash}\n`);
    out.close();
  } catch (error) {
    // A failed write (disk full) leaves no partial temporary manifest behind; the real one is intact.
    try {
      out.close();
    } catch {
      // the write already failed; the descriptor is closed either way
    }
    rmSync(temporary, { force: true });
    throw error;
  }
  renameSync(temporary, path);
}

/** Identifies one written manifest (inode, size, mtime): any rewrite, by anyone, changes it. */
export function manifestStamp(outDir: string): string | undefined {
  try {
    const stats = statSync(join(outDir, MANIFEST_FILE), { bigint: true });
    return `${stats.ino}:${stats.size}:${stats.mtimeNs}`;
  } catch {
    return undefined;
  }
}
