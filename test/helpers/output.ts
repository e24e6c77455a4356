/** Reading a built output tree back: every file, parsed documents, and a byte-level snapshot. */
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** Every regular file under `dir` (relative paths, sorted), dot folders included. */
export function listFiles(dir: string): string[] {
  const files: string[] = [];
  const walk = (current: string) => {
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      const path = join(current, entry.name);
      if (entry.isDirectory()) walk(path);
      else files.push(relative(dir, path));
    }
  };
  walk(dir);
  return files.sort();
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
