/**
 * A shard's gzip variant is cut into pieces of about as many members as a whole list's, although
 * every member of a shard shares its name's hash modulo the shard count (core/slice.ts): the
 * boundaries must not follow that residue (a piece after every second member of shard 0 of 8, none
 * before the 64-member cap in shard 1 of 8).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CREATORS_GZIP_INDEX_FILE } from '../../src/core/layout.js';
import { readIndexFile } from '../../src/output/gzip-index.js';
import { buildTo } from '../helpers/build.js';
import { makeStore } from '../faults/helpers.js';
import { tempDir } from '../helpers/store.js';

/** Pieces in a tree's variant, as its index lists them. */
const pieces = (out: string) => {
  const listed = readIndexFile(join(out, CREATORS_GZIP_INDEX_FILE));
  if (listed === undefined) throw new Error(`${out} has no index of pieces`);
  return listed.count;
};

describe("a shard's gzip pieces", () => {
  it('hold about 16 members each, in every shard, as a whole list does', () => {
    const dir = tempDir();
    try {
      const db = join(dir.path, 'store.db');
      makeStore(db, 16_000);
      const whole = buildTo(db, join(dir.path, 'whole'));
      const perPiece = { whole: whole.creators / pieces(join(dir.path, 'whole')) };
      for (const index of [0, 1, 2, 5]) {
        const out = join(dir.path, `shard-${index}`);
        const report = buildTo(db, out, { shard: { index, count: 8 } });
        expect(report.creators).toBeGreaterThan(1000);
        const members = report.creators / pieces(out);
        expect(members, `shard ${index}/8`).toBeGreaterThan(perPiece.whole * 0.7);
        expect(members, `shard ${index}/8`).toBeLessThan(perPiece.whole * 1.4);
      }
    } finally {
      dir.cleanup();
    }
  });
});
