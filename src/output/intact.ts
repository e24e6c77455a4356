/**
 * What a healing build (`build --full`) checks before it trusts a profile the manifest says is
 * unchanged. A profile's entry has no file stamp (one per alias file would double a million-line
 * manifest), so its files are read: each must be a success document whose data hashes to the
 * entry's hash, and every alias must hold the same bytes. A plain build never calls this.
 */
import { readFileSync, statSync, type BigIntStats } from 'node:fs';
import { fingerprint } from '../core/hash.js';
import { PROFILE_DIRS } from '../core/layout.js';
import { successDocumentData } from '../render/documents.js';

/** How many of a profile's alias files are missing or do not hold the data hashed to `hash`. */
export function damagedProfileFiles(outDir: string, name: string, hash: string): number {
  let damaged = 0;
  let reference: { stats: BigIntStats; bytes: Buffer } | undefined;
  for (const dir of PROFILE_DIRS) {
    const file = `${outDir}/${dir}/${name}`;
    const stats = statSync(file, { bigint: true, throwIfNoEntry: false });
    // Hard links of the reference (as builds write aliases) are that very file: not read again.
    if (stats?.isFile() && reference !== undefined && sameFile(stats, reference.stats)) continue;
    const bytes = stats?.isFile() ? readOrUndefined(file) : undefined;
    // The first alias that holds the data is the reference the others must equal byte for byte.
    const holds = bytes !== undefined && (reference === undefined ? holdsData(bytes, hash) : bytes.equals(reference.bytes));
    if (holds) reference ??= { stats: stats!, bytes };
    else damaged += 1;
  }
  return damaged;
}

function holdsData(bytes: Buffer, hash: string): boolean {
  const data = successDocumentData(bytes.toString('utf8'));
  return data !== undefined && fingerprint(data) === hash;
}

const sameFile = (a: BigIntStats, b: BigIntStats) => a.ino === b.ino && a.dev === b.dev;

function readOrUndefined(file: string): Buffer | undefined {
  try {
    return readFileSync(file);
  } catch {
    return undefined; // removed meanwhile, or unreadable: rewritten like a missing one
  }
}
