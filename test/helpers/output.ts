/** Reading a built output tree back: every file, parsed documents, and a byte-level snapshot. */
import fg from 'fast-glob';
import { lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Every regular file under `dir` (relative paths, sorted), dot folders included. */
export function listFiles(dir: string): string[] {
  return fg.sync('**/*', { cwd: dir, dot: true, onlyFiles: true, followSymbolicLinks: false }).sort();
}

/** The published files: everything but the tool's own dot folder. */
export function publishedFiles(dir: string): string[] {
  return listFiles(dir).filter((f) => !f.startsWith('.profile-snapshot/'));
}

export function readJson<T = any>(out: string, path: string): T {
  return JSON.parse(readFileSync(join(out, path), 'utf8')) as T;
}

export function profile(out: string, name: string): any {
  return readJson(out, `api/v1/users/${name}`);
}

/** path -> { bytes, mtimeMs, ino } for every published file. */
export function snapshotTree(dir: string): Map<string, { bytes: string; mtimeMs: number; ino: number }> {
  const result = new Map<string, { bytes: string; mtimeMs: number; ino: number }>();
  for (const f of publishedFiles(dir)) {
    const stats = lstatSync(join(dir, f));
    result.set(f, { bytes: readFileSync(join(dir, f), 'utf8'), mtimeMs: stats.mtimeMs, ino: stats.ino });
  }
  return result;
}
