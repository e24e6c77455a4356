/**
 * EntryMap against a Map<string, string> fed the same random operations: the same entries, in the
 * same order, through index growth, deleted rows dropped, and entries that do not fit a slot.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { EntryMap } from '../../src/output/entry-map.js';
import { prng } from '../../src/seed/synthetic.js';

const entryOf = (next: () => number, i: number): string => {
  const kind = next();
  if (kind < 0.02) return '-';
  if (kind < 0.04) return `${'h'.repeat(16)}\t${'s'.repeat(16)}\t${'9'.repeat(10)}x`; // longer than a slot
  if (kind < 0.05) return `ünïcödé ☃ ${i}`; // not Latin-1
  if (kind < 0.06) return '';
  const hash = Math.floor(next() * 2 ** 48)
    .toString(36)
    .padStart(16, 'a');
  return `${hash}\t${hash.split('').reverse().join('')}\t${kind < 0.5 ? Math.floor(next() * 5000) : ''}`;
};

/** Row by row, `name`'s entry reads as `entry`, as a string and as the bytes a manifest line copies. */
function expectRow(map: EntryMap, name: string, entry: string | undefined): void {
  const row = map.rowOf(name);
  expect(row === -1).toBe(entry === undefined);
  if (entry === undefined) return;
  expect(map.nameAt(row)).toBe(name);
  expect(map.entryAt(row)).toBe(entry);
  expect(map.entryIs(row, entry)).toBe(true);
  expect(map.entryIs(row, `${entry}x`)).toBe(false);
  const length = map.entryLength(row);
  if (length === -1) {
    // Kept as a string: longer than a slot, or not Latin-1.
    expect(entry.length > 40 || [...entry].some((c) => c.charCodeAt(0) > 0xff)).toBe(true);
    return;
  }
  expect(length).toBe(entry.length);
  const into = Buffer.alloc(length + 2, 0x2a);
  expect(map.copyEntry(row, into, 1)).toBe(1 + length);
  expect(into.toString('latin1')).toBe(`*${entry}*`);
  expect(map.slotChunk(row).toString('latin1', map.slotStart(row), map.slotStart(row) + length)).toBe(entry);
}

describe('EntryMap', () => {
  it.each([1, 2, 3, 4, 5, 6, 7, 8])('behaves as a Map through 30,000 random operations (seed %i)', (seed) => {
    const next = prng(seed); // a failing seed can be run again
    const map = new EntryMap();
    const expected = new Map<string, string>();
    const names = Array.from({ length: 4000 }, (_, i) => (i % 7 === 0 ? `Ünï-${i}` : `user${i}`));
    for (let op = 0; op < 30_000; op++) {
      const name = names[Math.floor(next() * (op < 10_000 ? names.length : names.length / 4))]!;
      const what = next();
      if (what < 0.55) {
        const entry = entryOf(next, op);
        expect(map.set(name, entry)).toBe(map);
        expected.set(name, entry);
      } else if (what < 0.85) {
        expect(map.delete(name)).toBe(expected.delete(name));
      } else {
        expect(map.get(name)).toBe(expected.get(name));
        expect(map.has(name)).toBe(expected.has(name));
        expectRow(map, name, expected.get(name));
      }
      expect(map.size).toBe(expected.size);
      if (op % 5000 === 4999) expect([...map]).toEqual([...expected]);
    }
    expect([...map]).toEqual([...expected]);
    expect([...map].map(([name]) => name)).toEqual([...expected.keys()]);
    for (const entry of ['-', '', 'nothing like it']) expect(map.includes(entry)).toBe([...expected.values()].includes(entry));
  });

  it('keeps its place for an entry set again, and puts one deleted and set again last', () => {
    const map = new EntryMap().set('a', '1').set('b', '2').set('c', '3');
    map.set('a', 'a longer entry than the first');
    map.delete('b');
    map.set('b', '4');
    expect([...map]).toEqual([
      ['a', 'a longer entry than the first'],
      ['c', '3'],
      ['b', '4'],
    ]);
  });

  it('lets go of the memory of the rows it deleted', () => {
    const map = new EntryMap();
    for (let i = 0; i < 100_000; i++) map.set(`user${i}`, `${'h'.repeat(16)}\t${'s'.repeat(16)}\t${i}`);
    for (let i = 0; i < 99_000; i++) map.delete(`user${i}`);
    expect(map.size).toBe(1000);
    expect(map.get('user99500')).toBe(`${'h'.repeat(16)}\t${'s'.repeat(16)}\t99500`);
    expect([...map].map(([name]) => name)).toEqual(Array.from({ length: 1000 }, (_, i) => `user${99_000 + i}`));
  });

  it('holds a profile in under three quarters of the memory a Map of entry strings takes', () => {
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    const count = 180_000;
    // The names are held anyway (a pass's staging and list hold them): only the entries count.
    const names = Array.from({ length: count }, (_, i) => `user${i}`);
    const entry = (i: number) => [i.toString(36).padStart(16, 'h'), i.toString(36).padStart(16, 's'), String(i % 900)].join('\t');
    const heapOf = (fill: () => unknown) => {
      // Its slots are buffers, outside the heap: counted with it. Buffers an earlier test let go of
      // are freed after a collection, concurrently: a second collection waits for that to finish,
      // or their bytes would leave during the fill and be counted against it.
      const used = () => {
        collect();
        collect();
        return process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
      };
      const before = used();
      const kept = fill();
      const grown = used() - before;
      expect(kept).toBeDefined();
      return grown / count;
    };
    const inMap = heapOf(() => {
      const map = new Map<string, string>();
      for (let i = 0; i < count; i++) map.set(names[i]!, entry(i));
      return map;
    });
    const inEntryMap = heapOf(() => {
      const map = new EntryMap();
      for (let i = 0; i < count; i++) map.set(names[i]!, entry(i));
      return map;
    });
    expect(inEntryMap).toBeLessThan(inMap * 0.75);
  });
});
