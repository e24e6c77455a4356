/** The pieces of a gzip variant as a table: found by key, written as the index file's records and read back. */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { emptyPieceTable, PieceTable, writePieceIndex } from '../../src/output/gzip-index.js';
import { tempDir } from '../helpers/store.js';
import { lengthShift } from '../../src/output/gzip-member.js';

/** Keys of 53 bits that share their low 32 bits by fours: the table's slots must tell them apart. */
const keyOf = (i: number) => (i % 4) * 2 ** 40 + Math.floor(i / 4) * 7919 + 2 ** 52;

it('finds each piece by its key, keys sharing their low bits and the table grown past its first size', () => {
  const table = new PieceTable(1);
  for (let i = 0; i < 1000; i++) table.add(keyOf(i), i * 100, 50 + i, 1000 + i, (i * 2654435761) >>> 0, lengthShift(1000 + i));
  expect(table.count).toBe(1000);
  for (let i = 0; i < 1000; i++) expect(table.find(keyOf(i))).toBe(i);
  expect(table.find(keyOf(1000))).toBe(-1);
  expect(table.find(2 ** 52 + 1)).toBe(-1);
  // A piece added after a lookup is found too.
  table.add(12345, 0, 1, 2, 3, lengthShift(2));
  expect(table.find(12345)).toBe(1000);
});

it("reads back the records it writes, each piece's length shift made again", () => {
  const table = new PieceTable(4);
  for (let i = 0; i < 10; i++) table.add(keyOf(i), i * 2 ** 33, 7 + i, 2 ** 32 + i, 0xffffffff - i, lengthShift(2 ** 32 + i));
  const records = table.recordBytes();
  expect(records.length).toBe(10 * 40);
  expect(records.readDoubleLE(40 * 3)).toBe(keyOf(3)); // little-endian, the key first
  const read = PieceTable.fromRecords(records)!;
  expect(read.count).toBe(10);
  for (let i = 0; i < 10; i++) {
    expect([read.key(i), read.offset(i), read.compressed(i), read.length(i), read.crc(i), read.shift(i)]).toEqual([
      keyOf(i),
      i * 2 ** 33,
      7 + i,
      2 ** 32 + i,
      0xffffffff - i,
      lengthShift(2 ** 32 + i),
    ]);
  }
  expect(PieceTable.fromRecords(records.subarray(0, records.length - 8))).toBeUndefined();
});

it('once cleared, holds and finds only the pieces added since, in the memory it had', () => {
  const table = new PieceTable(600);
  for (let i = 0; i < 500; i++) table.add(keyOf(i), i, 1, 1, 0, lengthShift(1));
  expect(table.find(keyOf(499))).toBe(499); // the key table is made
  table.clear();
  expect(table.count).toBe(0);
  expect(table.find(keyOf(499))).toBe(-1);
  expect(table.capacity).toBe(600);
  // Fewer pieces, in a key table of the same size: the records past them still hold the old keys.
  for (let i = 0; i < 300; i++) table.add(keyOf(1000 + i), i, 2, 2, 0, lengthShift(2));
  expect(table.capacity).toBe(600);
  for (let i = 0; i < 300; i++) expect(table.find(keyOf(1000 + i))).toBe(i);
  for (let i = 0; i < 500; i++) expect(table.find(keyOf(i))).toBe(-1);
});

it('makes the next table in the memory of the one whose index the last index replaced', () => {
  const dir = tempDir();
  try {
    mkdirSync(join(dir.path, '.profile-snapshot'));
    const written = (stamp: string) => {
      const table = emptyPieceTable(100);
      for (let i = 0; i < 50; i++) table.add(keyOf(i), i, 1, 1, 0, lengthShift(1));
      writePieceIndex(dir.path, stamp, 'settings', table, { list: 1, starts: new Int32Array(51) });
      return table;
    };
    const first = written('a');
    const second = written('b');
    const next = emptyPieceTable(100);
    expect(next, 'the table no index describes any longer').toBe(first);
    expect(next.count).toBe(0);
    expect(emptyPieceTable(100), 'taken once').not.toBe(first);
    const third = written('c');
    const after = emptyPieceTable(100);
    expect(after, "the table c's index replaced").toBe(second);
    expect(after, 'never the table the last index describes').not.toBe(third);
    // One that needs more room than the spare has is made anew.
    written('d');
    expect(emptyPieceTable(10_000).capacity).toBeGreaterThanOrEqual(10_000);
  } finally {
    dir.cleanup();
  }
});
