/**
 * A watcher composes each cycle's creators list over the last one's (ComposedColumn): the last
 * list's members stay where they are, this cycle's own are added in order. While no cycle writes
 * the manifest, lists compose over lists: each must still read as its members in order, hold no
 * level below the one it was made of, and tell which values it lacks without making a string per
 * member.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { ComposedColumn, type Column } from '../../src/output/list-order.js';
import { prng } from '../../src/seed/synthetic.js';

setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

/** A complete column over an array, as a manifest table's rows are. */
const complete = <T>(values: T[]): Column<T> => ({ length: values.length, at: (i) => values[i], complete: true });

/**
 * Every value of `column`, in order. A loop, not a callback: a callback holds the column through its
 * closure, and a busy machine's background compile of it held the closure past a collection.
 */
function read<T>(column: Column<T>): (T | undefined)[] {
  const values: (T | undefined)[] = [];
  for (let i = 0; i < column.length; i++) values.push(column.at(i));
  return values;
}

/** A random next list over `last`: some members dropped, some of this cycle's own put in between. */
function nextOrder(lastLength: number, random: () => number): { order: number[]; ownCount: number } {
  const order: number[] = [];
  let own = 0;
  for (let j = 0; j < lastLength; j++) {
    if (random() < 0.1) order.push(own++);
    if (random() >= 0.05) order.push(~j);
  }
  return { order, ownCount: own };
}

describe('a list composed over the last one (ComposedColumn)', () => {
  it('reads as its members in order however many cycles compose it, and keeps nothing of the lists between', async () => {
    const random = prng(62);
    const base = Array.from({ length: 400 }, (_, i) => ({ name: `base${i}` }));
    let expected: { name: string }[] = base;
    let column: Column<{ name: string }> = complete(base);
    const dropped: WeakRef<{ name: string }>[] = [];
    for (let cycle = 0; cycle < 40; cycle++) {
      const { order, ownCount } = nextOrder(column.length, random);
      const own = Array.from({ length: ownCount }, (_, k) => ({ name: `own${cycle}.${k}` }));
      // A loop, as in `read`: no closure over this cycle's values for a compile job to hold.
      const next: { name: string }[] = [];
      for (const i of order) next.push(i < 0 ? expected[~i]! : own[i]!);
      // This cycle's own values the next list drops: nothing should hold them once it is made.
      const kept = new Set(next);
      for (const value of expected) if (!kept.has(value)) dropped.push(new WeakRef(value));
      column = ComposedColumn.of(order, column, own);
      expected = next;
      expect(read(column)).toEqual(expected);
    }
    expect(dropped.length).toBeGreaterThan(100);
    // Only after this job: a WeakRef made in it keeps its target alive until it ends.
    await new Promise((resolve) => setImmediate(resolve));
    collect();
    const alive = dropped.filter((ref) => ref.deref() !== undefined && !ref.deref()!.name.startsWith('base'));
    expect(alive.map((ref) => ref.deref()!.name)).toEqual([]);
    expect(read(column)).toEqual(expected);
  });

  it('says it is complete only when every value is known, and fills in only the values it lacks', () => {
    const last = complete(['a0', 'a1', 'a2', 'a3']);
    // ~0, own 0, ~1, ~3, own 1: this build's own entries are not known yet.
    const entries = ComposedColumn.of<string>([~0, 0, ~1, ~3, 1], last, undefined);
    expect(entries.complete).toBe(false);
    expect(ComposedColumn.of<string>([~0, 0, ~3], last, ['o0']).complete).toBe(true);
    const asked: number[] = [];
    const missing: number[] = [];
    const filled = entries.filled(
      (index) => {
        asked.push(index);
        return index === 1 ? 'found1' : undefined;
      },
      (index) => missing.push(index),
    );
    // The complete last list's values are not asked for.
    expect(asked).toEqual([1, 4]);
    expect(missing).toEqual([4]);
    expect(read(filled)).toEqual(['a0', 'found1', 'a1', 'a3', undefined]);
    expect(read(entries)).toEqual(['a0', undefined, 'a1', 'a3', undefined]);
  });

  it('holds values of an incomplete last list it had to look up, and composes on from them', () => {
    const last: Column<string | undefined> = { length: 3, at: (i) => ['b0', undefined, 'b2'][i] };
    const entries = ComposedColumn.of<string | undefined>([~0, ~1, ~2], last, undefined);
    expect(entries.complete).toBe(false);
    const filled = entries.filled(
      (index) => `looked${index}`,
      () => {
        throw new Error('nothing is missing');
      },
    );
    expect(read(filled)).toEqual(['b0', 'looked1', 'b2']);
    expect(read(ComposedColumn.of([~2, 0, ~1], filled, ['new']))).toEqual(['b2', 'new', 'looked1']);
  });
});
