/**
 * The users' slices (src/core/slice.ts): 32-bit FNV-1a of the lower-cased username's UTF-8 bytes,
 * modulo the count. The worked example of docs/architecture.md, the hash's reference values, an even
 * spread, and the store's queries by slice agreeing with the TypeScript function on every row.
 */
import { describe, expect, it } from 'vitest';
import { inSlice, sliceOf } from '../../src/core/slice.js';
import { sliceRows } from '../../src/store/queries.js';
import { ProfileStore } from '../../src/store/read.js';
import { eachTestWorkspace, SCHEMA_SQL, TestStore, type Workspace } from '../helpers/store.js';

/** A count of 2^32 leaves the hash itself. */
const WHOLE_HASH = 2 ** 32;

let db: Workspace['db'];
eachTestWorkspace((w) => ({ db } = w));

describe('sliceOf', () => {
  it("computes docs/architecture.md's worked example: Alice is in slice 3 of 4", () => {
    expect(sliceOf('Alice', WHOLE_HASH)).toBe(0x872213e7);
    expect(sliceOf('Alice', 4)).toBe(3);
    expect(inSlice('alice', { index: 3, count: 4 })).toBe(true);
  });

  it("is FNV-1a's published 32-bit values over the lower-cased name", () => {
    expect(sliceOf('a', WHOLE_HASH)).toBe(0xe40c292c);
    expect(sliceOf('foobar', WHOLE_HASH)).toBe(0xbf9cf968);
    expect(sliceOf('FooBar', WHOLE_HASH)).toBe(0xbf9cf968);
  });

  it('hashes the UTF-8 bytes of a name that is not ASCII', () => {
    // "é" is C3 A9 in UTF-8: the hash of those two bytes, not of the one character.
    const bytes = [0xc3, 0xa9].reduce((hash, byte) => Math.imul(hash ^ byte, 0x01000193), 0x811c9dc5) >>> 0;
    expect(sliceOf('É', WHOLE_HASH)).toBe(bytes);
  });

  it('puts an empty name, and any name of a single slice, in slice 0', () => {
    expect(sliceOf('', 4)).toBe(0);
    expect(sliceOf('alice', 1)).toBe(0);
  });

  it('spreads names evenly, whatever their shape', () => {
    const shapes = [(i: number) => `user${i}`, (i: number) => `u${i * 31}x`, (i: number) => `${String.fromCharCode(97 + (i % 26))}.${i}`];
    for (const shape of shapes) {
      for (const count of [2, 3, 4]) {
        const sizes = new Array<number>(count).fill(0);
        for (let i = 0; i < 60_000; i++) sizes[sliceOf(shape(i), count)]!++;
        for (const size of sizes) expect(Math.abs(size / (60_000 / count) - 1), `${shape(1)} in ${count}`).toBeLessThan(0.03);
      }
    }
  });
});

describe('the store reads by slice', () => {
  it('reads each user, with its socials, in the one slice sliceOf gives its name (anything but text in slice 0)', () => {
    const schema = SCHEMA_SQL.replace('TEXT NOT NULL UNIQUE COLLATE NOCASE', 'TEXT');
    if (schema === SCHEMA_SQL) throw new Error('schema changed: update this test');
    const usernames: unknown[] = [null, '', 42, 'Alice', 'ALICE', 'alice', 'Ünïcode', 'bad name'];
    for (let i = 0; i < 300; i++) usernames.push(`user${i}`);
    const store = new TestStore(db, schema);
    store.users(usernames.length, (id) => ({
      user: { username: usernames[id - 1] as string },
      socials: [['GitHub', `https://github.com/u${id}`, 1]],
    }));
    store.close();

    const count = 3;
    const expected = usernames.map((name) => (typeof name === 'string' ? sliceOf(name, count) : 0));
    const read = ProfileStore.open(db);
    try {
      const sliceRead = new Array<number | undefined>(usernames.length);
      for (let index = 0; index < count; index++) {
        read.forEachRow((row) => {
          const id = row.user[0];
          expect(sliceRead[id - 1], `user ${id} read twice`).toBeUndefined();
          sliceRead[id - 1] = index;
          expect(row.socials).toEqual([['GitHub', `https://github.com/u${id}`]]);
        }, sliceRows({ index, count }));
      }
      expect(sliceRead).toEqual(expected);
      expect(new Set(expected)).toEqual(new Set([0, 1, 2]));
    } finally {
      read.close();
    }
  });
});
