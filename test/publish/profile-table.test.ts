/**
 * What a publish holds of the tree and of the bucket (src/publish/plan/profile-table.ts), and how it
 * compares them (plan.ts) and writes them back (record/format.ts): sorted tables merged as streams,
 * checked against the maps they replace on random trees and states.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it, vi } from 'vitest';
import { forEachRow, ProfileTable, TableBuilder, tableOf, union } from '../../src/publish/plan/profile-table.js';
import { planPublish } from '../../src/publish/plan/plan.js';
import { emptyLive, UNKNOWN } from '../../src/publish/plan/live-set.js';
import type { LocalTree } from '../../src/publish/plan/local.js';
import { parseIntent, parseState, parseStateHead, serializeIntent, serializeState } from '../../src/publish/record/format.js';
import { prng } from '../../src/seed/synthetic.js';

const NAME_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789_.-';
const nameOf = (next: () => number) =>
  Array.from({ length: 1 + Math.floor(next() * 12) }, () => NAME_CHARS[Math.floor(next() * NAME_CHARS.length)]).join('');
const hashOf = (next: () => number) =>
  next() < 0.05
    ? UNKNOWN
    : Math.floor(next() * 8)
        .toString(36)
        .repeat(16);

/** `count` rows of random names (some repeated) and hashes, in no order. */
const rows = (next: () => number, count: number): [string, string][] =>
  Array.from({ length: count }, () => [nameOf(next), hashOf(next)] as [string, string]);

const treeOf = (profiles: ProfileTable): LocalTree => ({ profiles, files: new Map() }) as unknown as LocalTree;

describe('a table of profiles', () => {
  it('is in name order, the last row of a name winning, and finds each name', () => {
    const table = ProfileTable.of([
      ['carol', 'h3'],
      ['alice', 'h1'],
      ['bob', 'h2'],
      ['alice', 'h4'],
      ['al', 'h5'],
    ]);
    expect([...table]).toEqual([
      ['al', 'h5'],
      ['alice', 'h4'],
      ['bob', 'h2'],
      ['carol', 'h3'],
    ]);
    expect(table.size).toBe(4);
    expect([table.get('alice'), table.get('al'), table.get('ali'), table.get('zed')]).toEqual(['h4', 'h5', undefined, undefined]);
    expect([table.rowOf('bob'), table.rowOf('bob', 3), table.rowOf('carol', 2)]).toEqual([2, -1, 3]);
  });

  it('holds what a map of the same rows holds, at every seed', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const given = rows(prng(seed), 2000);
      const map = new Map(given);
      const table = ProfileTable.of(given);
      expect([...table]).toEqual([...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
      for (const [name, hash] of map) expect(table.get(name)).toBe(hash);
    }
  });

  it('given its room, asks for its bytes once, and holds the same rows as one grown row by row', () => {
    // A manifest's profiles at a million: each doubling held the old copy beside the new one.
    const given = rows(prng(7), 20_000);
    const bytes = given.reduce((sum, [name, hash]) => sum + name.length + 1 + hash.length, 0);
    const allocUnsafe = vi.spyOn(Buffer, 'allocUnsafe');
    let roomy: ProfileTable;
    try {
      const builder = new TableBuilder(undefined, { rows: given.length, bytes });
      for (const [name, hash] of given) builder.add(name, hash);
      roomy = builder.build();
      expect(allocUnsafe.mock.calls.filter(([size]) => size >= 64 * 1024)).toEqual([[bytes]]);
    } finally {
      allocUnsafe.mockRestore();
    }
    expect([...roomy]).toEqual([...ProfileTable.of(given)]);
    // Room too small is a hint, grown past.
    const small = new TableBuilder(undefined, { rows: 10, bytes: 100 });
    for (const [name, hash] of given) small.add(name, hash);
    expect([...small.build()]).toEqual([...roomy]);
  });

  it('merges with another as a union in which the second wins, as a map updated by it', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const next = prng(seed);
      const base = rows(next, 500);
      const over = rows(next, 300);
      const merged = union(ProfileTable.of(base), ProfileTable.of(over));
      expect([...tableOf(merged)]).toEqual([...ProfileTable.of([...base, ...over])]);
      expect(merged.size).toBe(ProfileTable.of([...base, ...over]).size);
    }
  });
});

/** The plan as the maps made it before the tables: each tree profile looked up in the live ones. */
function plannedByMaps(tree: Map<string, string>, live: Map<string, string>) {
  const profiles = [...tree].filter(([name, hash]) => live.get(name) !== hash).map(([name]) => name);
  const deleteProfiles = [...live.keys()].filter((name) => !tree.has(name));
  const unchanged = [...tree].filter(([name, hash]) => live.get(name) === hash).length * 2;
  return { profiles: profiles.sort(), deleteProfiles: deleteProfiles.sort(), unchanged };
}

describe('a plan made by merging the tree with the state', () => {
  it('sends, deletes and keeps what the maps did, each list in name order, at every seed', () => {
    for (let seed = 1; seed <= 30; seed++) {
      const next = prng(seed * 7919);
      const tree = rows(next, 1000).filter(([, hash]) => hash !== UNKNOWN);
      // Most of the state is the tree's, some changed, some gone, some only in the bucket.
      const live: [string, string][] = [
        ...tree.filter(() => next() < 0.9).map(([name, hash]) => [name, next() < 0.1 ? hashOf(next) : hash] as [string, string]),
        ...rows(next, 100),
      ];
      const plan = planPublish(treeOf(ProfileTable.of(tree)), { ...emptyLive(), profiles: ProfileTable.of(live) });
      const expected = plannedByMaps(new Map(tree), new Map(live));
      expect({ profiles: [...plan.profiles], deleteProfiles: [...plan.deleteProfiles.keys()], unchanged: plan.unchanged }).toEqual(
        expected,
      );
    }
  });

  it("holds the profiles to send as rows of the tree's table, named a chunk at a time", () => {
    const names = Array.from({ length: 5000 }, (_, i) => `user${String(i).padStart(5, '0')}`);
    const tree = ProfileTable.of(names.map((name) => [name, 'a'.repeat(16)] as const));
    const live = ProfileTable.of(names.filter((_, i) => i % 3 === 0).map((name) => [name, 'a'.repeat(16)] as const));
    const plan = planPublish(treeOf(tree), { ...emptyLive(), profiles: live });
    const sent = names.filter((_, i) => i % 3 !== 0);
    expect(plan.profiles.length).toBe(sent.length);
    // Past the first grown block of rows, each pick is the tree's row of that name.
    for (const index of [0, 1023, 1024, 2047, sent.length - 1]) {
      expect(plan.profiles.name(index)).toBe(sent[index]);
      expect(tree.name(plan.profiles.row(index))).toBe(sent[index]);
    }
    expect(plan.profiles.names(3000, 3000 + 1000)).toEqual(sent.slice(3000, 4000));
    expect(plan.profiles.names(3000)).toEqual(sent.slice(3000));
  });
});

describe('the record, written as streams', () => {
  const many = (count: number): [string, string][] =>
    Array.from({ length: count }, (_, i) => [`user${(i * 7919) % count}`, `h${i.toString(36).padStart(15, '0')}`]);

  it('lists the profiles in name order, whatever order they were given in, in gzip members a plain gunzip reads', () => {
    const given = many(60_000); // about 2 MB of lines: more than one member
    const bytes = serializeState('s1', given, [['service-api/v1/creators', 'c1']], { tree: 'd1', profiles: given.length, files: 1 });
    const lines = gunzipSync(bytes).toString('utf8').split('\n');
    const names = lines.filter((line) => line.startsWith('p\t')).map((line) => line.split('\t')[1]!);
    expect(names).toEqual([...names].sort());
    expect(names).toHaveLength(given.length);
    const bodyBytes = gunzipSync(bytes).length - Buffer.byteLength(lines[0]!) - 1;
    expect(lines[0]).toBe(`profile-snapshot remote state 1\ts1\td1\t60000\t1\t${bodyBytes}`);
    // The quiet check reads the first 4 KB only.
    expect(parseStateHead(bytes.subarray(0, 4096))).toEqual({ id: 's1', tree: 'd1', profiles: 60_000, files: 1 });
    const parsed = parseState(bytes);
    expect([...tableOf(parsed.live.profiles)]).toEqual([...ProfileTable.of(given)]);
    expect([...parsed.live.files]).toEqual([['service-api/v1/creators', 'c1']]);
  });

  it('holds a state as its gzip, inflating a member at a time as it is walked, the same rows each walk', () => {
    const given = many(200_000); // about 6 MB of lines: members of a megabyte
    const bytes = serializeState('s1', given, [['service-api/v1/creators', 'c1']], { tree: 'd1', profiles: given.length, files: 1 });
    const textBytes = gunzipSync(bytes).length;
    const allocations = vi.spyOn(Buffer, 'allocUnsafe');
    let parsed: ReturnType<typeof parseState>;
    try {
      parsed = parseState(bytes);
      // The text inflated whole asked for a buffer of its length at once.
      const largest = Math.max(...allocations.mock.calls.map(([size]) => size));
      expect(largest).toBeLessThan(textBytes / 4);
    } finally {
      allocations.mockRestore();
    }
    expect([parsed.live.profiles.size, parsed.live.profiles.byteLength]).toEqual([given.length, bytes.length]);
    expect([...parsed.live.files]).toEqual([['service-api/v1/creators', 'c1']]);
    const expected = [...ProfileTable.of(given)];
    expect([...tableOf(parsed.live.profiles)]).toEqual(expected);
    expect([...tableOf(parsed.live.profiles)]).toEqual(expected);
    expect(parsed.live.profiles.rowsByteLength).toBe(ProfileTable.of(given).rowsByteLength);
    // Merged with a table as a plan and a checkpoint merge it: a row read is never one of the next member's.
    const over = many(200_000)
      .filter((_, i) => i % 997 === 0)
      .map(([name]) => [name, UNKNOWN] as [string, string]);
    expect([...tableOf(union(parsed.live.profiles, ProfileTable.of(over)))]).toEqual([...ProfileTable.of([...given, ...over])]);
    expect([...tableOf(union(ProfileTable.of(over), parsed.live.profiles))]).toEqual([...ProfileTable.of([...over, ...given])]);
  });

  it('hands each member back as the walk moves past it: a walk holds about one member, not all it read', () => {
    const given = many(400_000); // about 13 MB of lines: a dozen members of a megabyte
    const bytes = serializeState('s1', given, [], { tree: 'd1', profiles: given.length, files: 0 });
    const parsed = parseState(bytes);
    const before = process.memoryUsage().arrayBuffers;
    let most = 0,
      rows = 0,
      last: unknown;
    forEachRow(parsed.live.profiles, (table) => {
      rows++;
      if (table === last) return;
      last = table;
      most = Math.max(most, process.memoryUsage().arrayBuffers - before);
    });
    expect(rows).toBe(given.length);
    // Left to the collector, the members' buffers piled up: several megabytes by the end of the walk.
    expect(most).toBeLessThan(4 * 2 ** 20);
  });

  it('reads a state whose gzip members split its lines anywhere, the header line included', () => {
    const given = many(3000);
    const text = gunzipSync(serializeState('s1', given, [['service-api/v1/creators', 'c1']], { tree: 'd1', profiles: 3000, files: 1 }));
    for (let seed = 1; seed <= 20; seed++) {
      const next = prng(seed);
      // Cuts anywhere: inside the header, inside a line, pieces shorter than a line, a last line with no newline.
      const cuts = [0, 5, 17, ...Array.from({ length: 40 }, () => Math.floor(next() * text.length))].sort((a, b) => a - b);
      const ends = seed % 2 === 0 ? text.length : text.length - 1;
      const members = cuts.map((from, k) => gzipSync(text.subarray(from, Math.min(cuts[k + 1] ?? ends, ends))));
      const parsed = parseState(Buffer.concat(members));
      expect([...tableOf(parsed.live.profiles)]).toEqual([...ProfileTable.of(given)]);
      expect([...parsed.live.files]).toEqual([['service-api/v1/creators', 'c1']]);
    }
  });

  it('finds a damaged state when it is parsed, in any member: not trusted, never half-read later', () => {
    const given = many(100_000);
    const bytes = serializeState('s1', given, [], { tree: 'd1', profiles: given.length, files: 0 });
    for (const at of [bytes.length >> 2, bytes.length >> 1, bytes.length - 4, bytes.length - 9]) {
      const damaged = Buffer.from(bytes);
      damaged[at] = damaged[at]! ^ 0x55;
      expect(() => parseState(damaged), `a byte changed at ${at} of ${bytes.length}`).toThrow(/damaged/);
    }
    expect(() => parseState(bytes.subarray(0, bytes.length - 3))).toThrow(/damaged/);
    expect(() => parseState(Buffer.concat([bytes, Buffer.from('trailing')]))).toThrow(/damaged/);
  });

  it('writes a state into one buffer, its room asked for before the first member', () => {
    const given = ProfileTable.of(many(200_000));
    const allocations = vi.spyOn(Buffer, 'allocUnsafe');
    try {
      const bytes = serializeState('s1', given, [], { tree: 'd1', profiles: given.size, files: 0 });
      const large = allocations.mock.results.map(({ value }) => value as Buffer).filter((buffer) => buffer.length >= 64 * 1024);
      // Asked for as the writer starts, beside its batch of text; the members kept apart and joined
      // at the end asked for the gzip's size once more, last.
      const room = large.findIndex((buffer) => buffer.buffer === bytes.buffer);
      expect([room >= 0, room < 2]).toEqual([true, true]);
      expect(large.filter((buffer) => buffer.length >= bytes.length)).toHaveLength(1);
      expect(parseState(bytes).live.profiles.size).toBe(given.size);
    } finally {
      allocations.mockRestore();
    }
  });

  it("reads an older version's state: one gzip member, profiles in any order", () => {
    const given = many(5000);
    const text = ['profile-snapshot remote state 1\told', 'f\tservice-api/v1/creators\tc1', ...given.map(([n, h]) => `p\t${n}\t${h}`), ''];
    const parsed = parseState(gzipSync(Buffer.from(text.join('\n'))));
    expect(parsed.id).toBe('old');
    expect([...tableOf(parsed.live.profiles)]).toEqual([...ProfileTable.of(given)]);
  });

  it('writes an intent from iterables, and reads it back as sets', () => {
    const names = many(30_000).map(([name]) => name);
    const bytes = serializeIntent({ id: 'i1', base: 's1', profiles: names.values(), files: ['a', 'ü/b'], strays: ['x y'] });
    const intent = parseIntent(bytes);
    expect([intent.id, intent.base, intent.profiles.size, [...intent.files], [...intent.strays]]).toEqual([
      'i1',
      's1',
      names.length,
      ['a', 'ü/b'],
      ['x y'],
    ]);
  });
});
