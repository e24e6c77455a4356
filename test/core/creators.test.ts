/**
 * The creators list assembled from its scratch file, by whole read and by positioned reads, and its
 * gzip variant, pieces of which are copied from the last one when their members did not change.
 */
import { readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { gunzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fingerprint } from '../../src/core/hash.js';
import { CREATORS_GZIP_INDEX_FILE } from '../../src/core/layout.js';
import { CreatorsList } from '../../src/output/creators.js';
import { FingerprintColumn } from '../../src/output/fingerprint-column.js';
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
      tx.profile(name, fingerprint(json), '', Buffer.byteLength(json), () => json);
      list.add(name, json, fingerprint(json));
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

  it('deflates every piece again when the index was cut short', () => {
    buildList(users);
    const index = join(dir.path, CREATORS_GZIP_INDEX_FILE);
    const whole = readFileSync(index);
    writeFileSync(index, whole.subarray(0, whole.length - 3)); // its last record a few bytes short
    users.set(2, 1);
    expect(buildList(users).reused).toBe(0);
  });
});

describe("another thread's members, adopted", () => {
  /** A slice's members as its thread hands them over: JSON in a scratch file, each by its index among the slice's profiles. */
  const handover = (file: string, members: { name: string; json: string }[], extraProfiles = 0) => {
    const names: string[] = [];
    const entries: string[] = [];
    const positions: number[] = [];
    const offsets: number[] = [];
    const lengths: number[] = [];
    let offset = 0;
    for (const { name, json } of members) {
      // Profiles that are not members sit between the members among the slice's profiles.
      for (let extra = 0; extra < extraProfiles; extra++) {
        names.push(`${name}-not-a-member-${extra}`);
        entries.push([fingerprint(`${name}${extra}`), 'sig', ''].join('\t'));
      }
      positions.push(names.length);
      names.push(name);
      // Flat strings, as a handover's arrive from another thread (a template's would be flattened on first read).
      entries.push([fingerprint(json), 'sig', Buffer.byteLength(json)].join('\t'));
      offsets.push(offset);
      lengths.push(Buffer.byteLength(json));
      offset += Buffer.byteLength(json);
    }
    writeFileSync(file, members.map((m) => m.json).join(''));
    const creators = {
      scratch: file,
      scratchBytes: offset,
      profiles: Int32Array.from(positions),
      offsets: Float64Array.from(offsets),
      lengths: Float64Array.from(lengths),
    };
    return { creators, profiles: { names, entries } };
  };
  const member = (i: number) => {
    const name = `m${String(i).padStart(7, '0')}`;
    return { name, json: JSON.stringify({ username: name, views: i }) };
  };

  it("lists its own and two other slices' members in name order, each with its exact bytes", () => {
    const all = Array.from({ length: 60 }, (_, i) => member(i));
    const tx = OutputTransaction.begin(dir.path);
    const list = new CreatorsList(tx, 'list');
    // Three slices by i modulo 3, as threads share a store out by name: their members interleave.
    for (const { name, json } of all.filter((_, i) => i % 3 === 0)) {
      tx.profile(name, fingerprint(json), '', Buffer.byteLength(json), () => json);
      list.add(name, json, fingerprint(json));
    }
    for (const slice of [1, 2]) {
      const { creators, profiles } = handover(
        join(dir.path, `scratch-${slice}`),
        all.filter((_, i) => i % 3 === slice),
        slice,
      );
      list.adopt(creators, profiles);
    }
    expect(list.size).toBe(60);
    expect(() => list.add('late', '{}', fingerprint('{}'))).toThrow(/after another slice's members/);
    list.finish(tx, '{"data":', () => '}');
    tx.commit();
    const text = readFileSync(join(dir.path, 'list'), 'utf8');
    expect(text).toBe(`{"data":[${all.map((m) => m.json).join(',')}]}`);
    expect(gunzipSync(readFileSync(join(dir.path, '.list.gz'))).toString('utf8')).toBe(text);
  });

  it('takes them in without copying them member by member', () => {
    const count = 200_000;
    const { creators, profiles } = handover(
      join(dir.path, 'scratch'),
      Array.from({ length: count }, (_, i) => member(i)),
    );
    const tx = OutputTransaction.begin(dir.path);
    const list = new CreatorsList(tx, 'list');
    const before = process.memoryUsage().heapUsed;
    list.adopt(creators, profiles);
    const grown = process.memoryUsage().heapUsed - before;
    // Copied into the list's five columns, they took at least 8 bytes a member in each. (Their data
    // hashes are copied, as 16 bytes each in a buffer outside the heap.)
    expect(grown).toBeLessThan(count * 8);
    expect(list.size).toBe(count);
    tx.abort();
  });

  it("does not keep the slice's manifest entries once its members' hashes are taken", async () => {
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    const { creators, profiles } = handover(
      join(dir.path, 'scratch'),
      Array.from({ length: 100 }, (_, i) => member(i)),
    );
    const tx = OutputTransaction.begin(dir.path);
    const list = new CreatorsList(tx, 'list');
    list.adopt(creators, profiles);
    const entries = new WeakRef(profiles.entries);
    profiles.entries = [];
    // A weak reference is cleared only after the task that made it has ended.
    await new Promise((resolve) => setTimeout(resolve, 0));
    collect();
    expect(entries.deref()).toBeUndefined();
    list.finish(tx, '{"data":', () => '}');
    tx.commit();
    expect(gunzipSync(readFileSync(join(dir.path, '.list.gz'))).toString('utf8')).toBe(readFileSync(join(dir.path, 'list'), 'utf8'));
  });
});

describe('its own members', () => {
  // A collection on demand: what a list keeps, not the garbage its additions made.
  setFlagsFromString('--expose-gc');
  const collect = runInNewContext('gc') as () => void;
  const count = 200_000;
  const names = Array.from({ length: count }, (_, i) => `user${i}`);
  const jsons = names.map((name, i) => JSON.stringify({ username: name, views: i }));

  /** The heap a list of `count` members grows by, a member, with each hash as `hashOf` gives it. */
  const heapPerMember = (hashOf: (i: number) => string) => {
    const tx = OutputTransaction.begin(dir.path);
    const list = new CreatorsList(tx, 'list');
    collect();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < count; i++) list.add(names[i]!, jsons[i]!, hashOf(i));
    collect();
    const perMember = (process.memoryUsage().heapUsed - before) / count;
    list.finish(tx, '{"data":', () => '}');
    tx.commit();
    return perMember;
  };

  it('keeps each data hash in its 16 bytes, not as a string that holds its whole digest', () => {
    // Against hashes the test holds anyway: the difference is what the list keeps of a hash.
    const held = jsons.map((json) => fingerprint(json));
    const withHeld = heapPerMember((i) => held[i]!);
    const withFresh = heapPerMember((i) => fingerprint(jsons[i]!));
    // A fingerprint string kept per member costs about 80 bytes: its digest comes with it.
    expect(withFresh - withHeld).toBeLessThan(24);
    const listed = JSON.parse(readFileSync(join(dir.path, 'list'), 'utf8')).data as { username: string }[];
    expect(listed.map((u) => u.username)).toEqual([...names].sort());
  });
});

describe('FingerprintColumn', () => {
  it('keeps the first 16 bytes of each text, a shorter one padded with zero bytes', () => {
    const column = new FingerprintColumn();
    const texts = Array.from({ length: 3000 }, (_, i) => (i % 1000 === 7 ? 'short' : `${fingerprint(String(i))}\tsig\t${i}`));
    for (const text of texts) column.push(text);
    const out = Buffer.alloc(texts.length * 16);
    for (let i = 0; i < texts.length; i++) expect(column.copyTo(i, out, i * 16)).toBe(16);
    texts.forEach((text, i) => {
      const expected = Buffer.alloc(16);
      expected.write(text.slice(0, 16), 'latin1');
      expect(out.subarray(i * 16, i * 16 + 16)).toEqual(expected);
    });
    expect(() => column.copyTo(texts.length, out, 0)).toThrow(RangeError);
  });
});
