/**
 * The creators list assembled from its scratch file, by whole read and by positioned reads, and its
 * gzip variant, pieces of which are copied from the last one when their members did not change.
 */
import { readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fingerprint } from '../../src/core/hash.js';
import { CREATORS_GZIP_INDEX_FILE } from '../../src/core/layout.js';
import { CreatorsList } from '../../src/output/creators.js';
import { OutputTransaction } from '../../src/output/tree.js';
import { tempDir } from '../helpers/store.js';

let dir: ReturnType<typeof tempDir>;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => dir.cleanup());

const members: [string, string][] = [
  ['zed', '{"username":"Zed","bio":"🎨 ünïcödé"}'],
  ['_under', '{"username":"_under"}'],
  ['b.c', '{"username":"b.c","bio":"\\u2028 \\"quoted\\""}'],
  ['a-b', '{"username":"A-b"}'],
];

describe.each([
  ['read whole', undefined],
  ['positioned reads', 0],
])('CreatorsList (%s)', (_label, limit) => {
  it('writes the members sorted by name, each with its exact bytes, inside the envelope', () => {
    const tx = OutputTransaction.begin(dir.path);
    const list = new CreatorsList(tx, 'list', limit);
    for (const [name, json] of members) {
      tx.profile(name, `hash-${name}`, '', Buffer.byteLength(json), () => json);
      list.add(name, json, `hash-${name}`);
    }
    list.finish(tx, '{"head":', () => ',"tail":1}');
    tx.commit();
    const text = readFileSync(join(dir.path, 'list'), 'utf8');
    expect(text).toBe(`{"head":[${['_under', 'a-b', 'b.c', 'zed'].map((n) => members.find(([m]) => m === n)![1]).join(',')}],"tail":1}`);
    expect(JSON.parse(text).head.map((u: { username: string }) => u.username)).toEqual(['_under', 'A-b', 'b.c', 'Zed']);
    expect(gunzipSync(readFileSync(join(dir.path, '.list.gz'))).toString('utf8')).toBe(text);
  });
});

it('an empty list is an empty array', () => {
  const tx = OutputTransaction.begin(dir.path);
  new CreatorsList(tx, 'list').finish(tx, '{"data":', () => '}');
  tx.commit();
  expect(readFileSync(join(dir.path, 'list'), 'utf8')).toBe('{"data":[]}');
  expect(gunzipSync(readFileSync(join(dir.path, '.list.gz'))).toString('utf8')).toBe('{"data":[]}');
});

describe('the gzip variant', () => {
  const member = (i: number, version = 0) => {
    const name = `user${String(i).padStart(5, '0')}`;
    const json = JSON.stringify({ username: name, bio: `bio ${i} ${'x'.repeat(i % 50)}`, views: version });
    return { name, json, hash: `${String(i).padStart(10, '0')}v${String(version).padStart(5, '0')}` };
  };
  /**
   * One build of the list from `users` (index -> version); what its variant cost. As a shard's
   * part (`partOfJoined`), with real data hashes: its pieces are cut by them.
   */
  const buildList = (users: Map<number, number>, { partOfJoined = false } = {}) => {
    const tx = OutputTransaction.begin(dir.path);
    const list = new CreatorsList(tx, 'list');
    for (const [i, version] of users) {
      const { name, json, hash: madeUp } = member(i, version);
      const hash = partOfJoined ? fingerprint(json) : madeUp;
      tx.profile(name, hash, '', Buffer.byteLength(json), () => json);
      list.add(name, json, hash);
    }
    const pieces = list.finish(tx, '{"data":', () => '}', { partOfJoined });
    tx.commit();
    expect(gunzipSync(readFileSync(join(dir.path, '.list.gz'))).equals(readFileSync(join(dir.path, 'list')))).toBe(true);
    return pieces!;
  };
  const users = new Map(Array.from({ length: 3000 }, (_, i) => [i, 0] as [number, number]));

  it('deflates every piece once, then only those whose members (or the few before them) changed', () => {
    const first = buildList(users);
    expect(first.pieces).toBeGreaterThan(100);
    expect(first.reused).toBe(0);
    users.set(1500, 1); // changed
    users.delete(700); // gone
    users.set(5000, 0); // new, at the end
    const second = buildList(users);
    expect(second.reused).toBeLessThan(second.pieces);
    // At most the piece of each change and the pieces whose dictionary it is in (a piece or two after).
    expect(second.pieces - second.reused).toBeLessThanOrEqual(3 * 3);
  });

  it("cuts a shard's part by its members' data: pieces of about as many members, as few deflated again", () => {
    const part = new Map(Array.from({ length: 3000 }, (_, i) => [i, 0] as [number, number]));
    const first = buildList(part, { partOfJoined: true });
    expect(part.size / first.pieces).toBeGreaterThan(16 * 0.7);
    expect(part.size / first.pieces).toBeLessThan(16 * 1.4);
    part.set(1500, 1); // changed: its boundary may move, joining or splitting its piece
    part.delete(700);
    part.set(5000, 0);
    const second = buildList(part, { partOfJoined: true });
    expect(second.reused).toBeGreaterThan(0);
    expect(second.pieces - second.reused).toBeLessThanOrEqual(3 * 3 + 1);
  });

  it('deflates every piece again when the index or the variant is not the one the last build wrote', () => {
    buildList(users);
    writeFileSync(join(dir.path, CREATORS_GZIP_INDEX_FILE), 'not an index\n');
    users.set(1, 1);
    expect(buildList(users).reused).toBe(0);
    users.set(1, 2);
    expect(buildList(users).reused).toBeGreaterThan(0);
    const later = new Date(Date.now() + 5000);
    utimesSync(join(dir.path, '.list.gz'), later, later); // someone touched it
    users.set(1, 3);
    expect(buildList(users).reused).toBe(0);
  });
});
