/**
 * A watcher keeps the manifest it wrote as that file's own profile lines (an EntryTable under a
 * ProfileEntries), and writes the next one by copying the lines of profiles carried over unchanged
 * (profile-section.ts). What it writes must be, byte for byte, the manifest encoded afresh from the
 * same entries, whatever changed between them (its digest line aside: chained from the last one's);
 * and the entries must read as a Map of them would.
 */
import { Hash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { MANIFEST_FILE, STATE_DIR } from '../../src/core/layout.js';
import { EntryTable, type RetiredTable } from '../../src/output/entry-table.js';
import { BufferedFileWriter } from '../../src/output/file-writer.js';
import { ManifestCache } from '../../src/output/manifest-cache.js';
import { readManifestDigest, writeManifest, type Manifest } from '../../src/output/manifest.js';
import { ProfileEntries } from '../../src/output/profile-entries.js';
import { prng } from '../../src/seed/synthetic.js';
import { tempDir } from '../helpers/store.js';

let dir: ReturnType<typeof tempDir>;
beforeEach(() => (dir = tempDir()));
afterEach(() => dir.cleanup());

const outDir = (name: string) => {
  const path = join(dir.path, name);
  mkdirSync(join(path, STATE_DIR), { recursive: true });
  return path;
};

const random = prng(62);
const pick = (n: number) => Math.floor(random() * n);
const memberEntry = (name: string, version: number) => `${name.padEnd(16, '0').slice(0, 16)}\tv${version}\t${100 + version + name.length}`;
const otherEntry = (name: string, version: number) => `${name.padEnd(16, '0').slice(0, 16)}\tv${version}\t`;
const lengthOf = (entry: string) => Number(entry.split('\t')[2]);

/** A whole manifest with no table: members `names` (sorted), `others` not members, `files` other documents. */
function freshManifest(members: Map<string, string>, others: Map<string, string>, files: number): Manifest {
  const names = [...members.keys()].sort();
  const entries = names.map((name) => members.get(name)!);
  return {
    renderKey: 'tool+1\thttp://x',
    profiles: ProfileEntries.of([...members, ...others]),
    files: new Map(Array.from({ length: files }, (_, i) => [`doc/${'x'.repeat(i)}`, `h${i}\t1:2:3`])),
    list: { names, lengths: entries.map(lengthOf), entries },
  };
}

it('writes, over the table it kept, exactly what a fresh encoding writes, copying what did not change', () => {
  const version = new Map<string, number>();
  let members = new Map(
    Array.from({ length: 300 }, (_, i) => `user${String(i * 7).padStart(4, '0')}`).map((name) => [name, memberEntry(name, 0)]),
  );
  let others = new Map(['aa-other', 'mm-other', 'zz-other'].map((name) => [name, otherEntry(name, 0)]));
  const kept = outDir('kept');
  let last = writeManifest(kept, freshManifest(members, others, 3), true)!.read()!;
  const encoded = vi.spyOn(BufferedFileWriter.prototype, 'writeTabbedLine');
  const copiedEntries = vi.spyOn(BufferedFileWriter.prototype, 'writeTabbedRow');
  let rowLines = 0;
  const hashed = vi.spyOn(Hash.prototype, 'update');
  const byDigest = new Map<string, string>();
  let lines = 0;
  let encodedLines = 0;
  let manifestBytes = 0;
  let hashedBytes = 0;
  for (let round = 0; round < 40; round++) {
    // As a cycle does: some entries change (longer or shorter), members go and come, a member
    // becomes another profile and back, the other profiles change, and the lines before them.
    const nextMembers = new Map(members);
    const nextOthers = new Map(others);
    const names = [...members.keys()];
    for (let i = 0; i < pick(12); i++) {
      const name = names[pick(names.length)]!;
      version.set(name, pick(1000));
      nextMembers.set(name, memberEntry(name, version.get(name)!));
    }
    for (let i = 0; i < pick(6); i++) nextMembers.delete(names[pick(names.length)]!);
    for (let i = 0; i < pick(6); i++) {
      const name = `user${String(pick(3000)).padStart(4, '0')}x`;
      nextMembers.set(name, memberEntry(name, 0));
    }
    if (round % 4 === 1) {
      const name = names[pick(names.length)]!;
      nextMembers.delete(name);
      nextOthers.set(name, otherEntry(name, round));
    }
    if (round % 5 === 2) nextOthers.delete([...nextOthers.keys()][pick(nextOthers.size)]!);
    if (round % 3 === 0) nextOthers.set(`o${pick(100)}`, otherEntry('o', round));
    if (round % 7 === 3 && nextOthers.size > 0) {
      const name = [...nextOthers.keys()][0]!;
      nextOthers.delete(name);
      nextMembers.set(name, memberEntry(name, round));
    }

    // The build's view: the kept entries, each change set over them, and a list that names the
    // table row of each member carried over.
    const profiles = last.profiles;
    for (const name of new Set([...members.keys(), ...others.keys()]))
      if (!nextMembers.has(name) && !nextOthers.has(name)) profiles.delete(name);
    for (const [name, entry] of [...nextMembers, ...nextOthers]) if (profiles.get(name) !== entry) profiles.set(name, entry);
    const fresh = freshManifest(nextMembers, nextOthers, 1 + pick(5));
    const table = profiles.base;
    const listNames = fresh.list!.names as string[];
    // As a watcher's own list, every other round knows no member's entry (those not copied take
    // theirs from the entries set this cycle, as bytes), and half the rounds name no row for a member
    // whose row no longer holds its entry.
    const tableRows = Int32Array.from(listNames, (name) => {
      const row = table.find(name);
      return round % 4 < 2 && profiles.heldEntry(name) === undefined ? -1 : row;
    });
    const next: Manifest = {
      ...fresh,
      profiles,
      list: { ...fresh.list!, table, tableRows, ...(round % 2 === 0 && { entries: undefined }) },
    };
    expect(new Map(profiles)).toEqual(new Map(fresh.profiles));
    encoded.mockClear();
    copiedEntries.mockClear();
    hashed.mockClear();
    last = writeManifest(kept, next, true)!.read()!;
    encodedLines += encoded.mock.calls.filter(([kind]) => kind === 'u').length;
    rowLines += copiedEntries.mock.calls.length;
    hashedBytes += hashed.mock.calls.reduce((sum, [data]) => sum + (typeof data === 'string' ? data.length : data.byteLength), 0);
    const freshDir = outDir(`fresh-${round}`);
    writeManifest(freshDir, fresh);
    const bytes = readFileSync(join(kept, MANIFEST_FILE), 'latin1');
    const freshBytes = readFileSync(join(freshDir, MANIFEST_FILE), 'latin1');
    // All but the digest line: a fresh encoding's is the SHA-256 of its bytes, this one's is chained.
    expect(withoutDigest(bytes), `round ${round}`).toBe(withoutDigest(freshBytes));
    manifestBytes += bytes.length;
    const digest = readManifestDigest(kept)!;
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
    expect(digest).not.toBe(readManifestDigest(freshDir));
    // One digest, one content: no digest names two different manifests.
    expect(byDigest.get(digest) ?? bytes, `round ${round}`).toBe(bytes);
    byDigest.set(digest, bytes);
    // What is kept reads as the entries written, and lists the members in order.
    expect(new Map(last.profiles)).toEqual(new Map(fresh.profiles));
    expect(Array.from({ length: last.list!.names.length }, (_, i) => last.list!.names.at(i))).toEqual(listNames);
    expect(Array.from(last.list!.lengths)).toEqual(fresh.list!.lengths);
    lines += profiles.size;
    members = nextMembers;
    others = nextOthers;
  }
  // Most profile lines were copied from the table, not encoded again.
  expect(lines).toBeGreaterThan(10_000);
  expect(encodedLines).toBeGreaterThan(0);
  expect(encodedLines / lines).toBeLessThan(0.2);
  expect(rowLines).toBeGreaterThan(0);
  expect((encodedLines + rowLines) / lines).toBeLessThan(0.2);
  // The digest hashed the lines written anew, not the ones copied: it is chained from the last one.
  expect(hashedBytes).toBeGreaterThan(0);
  expect(hashedBytes / manifestBytes).toBeLessThan(0.25);
  expect(byDigest.size).toBeGreaterThan(30);
});

it('copies over a thousand runs between changed members, cycle after cycle, as a fresh encoding writes', () => {
  // A watcher's cycle at scale: one member in 50 changed (no row named, no entry from the list), the
  // runs between them over a kilobyte each, more than one gathered write holds; the second cycle
  // writes over the table whose rows the first one noted.
  const names = Array.from({ length: 52_000 }, (_, i) => `m${String(i).padStart(5, '0')}`);
  const members = new Map(names.map((name) => [name, memberEntry(name, 0)]));
  const others = new Map([['o1', otherEntry('o1', 0)]]);
  const kept = outDir('many-runs');
  let last = writeManifest(kept, freshManifest(members, others, 1), true)!.read()!;
  const copied = vi.spyOn(BufferedFileWriter.prototype, 'writeCopied');
  for (const cycle of [1, 2]) {
    const { profiles } = last;
    names.forEach((name, i) => i % 50 === cycle * 20 && members.set(name, memberEntry(name, cycle)));
    for (const [name, entry] of members) if (profiles.get(name) !== entry) profiles.set(name, entry);
    const fresh = freshManifest(members, others, 1);
    const tableRows = Int32Array.from(names, (name) => (profiles.heldEntry(name) === undefined ? -1 : profiles.base.find(name)));
    expect(tableRows.filter((row) => row === -1).length).toBe(1_040);
    copied.mockClear();
    last = writeManifest(
      kept,
      { ...fresh, profiles, list: { ...fresh.list!, table: profiles.base, tableRows, entries: undefined } },
      true,
    )!.read()!;
    expect(copied.mock.calls.filter(([bytes]) => bytes.length >= 1024).length).toBeGreaterThan(1024);
    const freshDir = outDir(`many-runs-fresh-${cycle}`);
    writeManifest(freshDir, fresh);
    const written = readFileSync(join(kept, MANIFEST_FILE), 'latin1');
    expect(withoutDigest(written), `cycle ${cycle}`).toBe(withoutDigest(readFileSync(join(freshDir, MANIFEST_FILE), 'latin1')));
  }
});

/** A manifest's text without its digest line (its second). */
const withoutDigest = (text: string) => {
  const first = text.indexOf('\n');
  return text.slice(0, first) + text.slice(text.indexOf('\n', first + 1));
};

it("tells a member's entry from another's by its bytes as by its text, each profile written once", () => {
  // Members' entries the list names, in every shape the rule takes as one (a length of 16 digits, or
  // with a space before it, is read as a number), and others' the section must list after them.
  const long = 'h'.repeat(40);
  const members = ['h\ts\t12', 'h\ts\t007', 'h\t\t5', 'h\ts\t1234567890123456', 'h\ts\t 12', `${long}\ts\t12`];
  const others = ['h\ts\t', '-', 'abc1', 'h\ts\t0', 'h\ts\t00', 'h\tx\ty\t12', 'h\ts\t1x2', '1\t2', `${long}\ts\t`, `${long}1`];
  const memberNames = members.map((_, i) => `m${i}`);
  const otherNames = others.map((_, i) => `o${i}`);
  const manifest: Manifest = {
    renderKey: 'tool+1\thttp://x',
    profiles: ProfileEntries.of([
      ...members.map((entry, i) => [`m${i}`, entry] as const),
      ...others.map((entry, i) => [`o${i}`, entry] as const),
    ]),
    files: new Map(),
    list: { names: memberNames, lengths: members.map(() => 1), entries: Array.from(members, () => undefined) },
  };
  const out = outDir('shapes');
  writeManifest(out, manifest);
  const names = readFileSync(join(out, MANIFEST_FILE), 'latin1')
    .split('\n')
    .filter((line) => line.startsWith('u\t'))
    .map((line) => line.split('\t')[1]);
  expect(names).toEqual([...memberNames, ...otherNames.sort()]);
});

it('reads and changes as a Map of the same entries does', () => {
  const names = Array.from({ length: 200 }, (_, i) => `n${String(i * 3).padStart(4, '0')}`);
  const map = new Map(names.map((name, i) => [name, i % 4 === 0 ? otherEntry(name, 0) : memberEntry(name, 0)]));
  const written = writeManifest(
    outDir('entries'),
    freshManifest(
      new Map([...map].filter(([, entry]) => !entry.endsWith('\t'))),
      new Map([...map].filter(([, entry]) => entry.endsWith('\t'))),
      0,
    ),
    true,
  )!.read()!;
  const entries = written.profiles;
  expect(entries.base.size).toBe(200);
  for (let op = 0; op < 2000; op++) {
    const name = `n${String(pick(650)).padStart(4, '0')}`;
    const which = pick(3);
    if (which === 0) expect(entries.delete(name)).toBe(map.delete(name));
    else if (which === 1) {
      const entry = memberEntry(name, op);
      entries.set(name, entry);
      map.set(name, entry);
    }
    expect(entries.get(name)).toBe(map.get(name));
    expect(entries.has(name)).toBe(map.has(name));
    expect(entries.size).toBe(map.size);
  }
  expect(new Map(entries)).toEqual(map);
});

it('takes nothing back from a manifest whose lines are not where they were written', () => {
  const out = outDir('changed');
  const members = new Map(['ann', 'bo', 'cy'].map((name) => [name, memberEntry(name, 0)]));
  const written = writeManifest(out, freshManifest(members, new Map([['zed', otherEntry('zed', 0)]]), 1), true)!;
  expect(new Map(written.read()!.profiles)).toEqual(new Map([...members, ['zed', otherEntry('zed', 0)]]));
  // The same size, a name one character longer and an entry one shorter: every tab moves.
  const path = join(out, MANIFEST_FILE);
  writeFileSync(
    path,
    readFileSync(path, 'latin1').replace(`bo\t${memberEntry('bo', 0)}`, `bob\t${memberEntry('bo', 0).slice(1)}`),
    'latin1',
  );
  expect(written.read()).toBeUndefined();
});

it('reads each manifest a watcher takes back into the memory of the table its last build read', () => {
  const out = outDir('cache');
  const cache = new ManifestCache();
  const members = new Map(['ann', 'bo', 'cy', 'dee'].map((name) => [name, memberEntry(name, 0)]));
  cache.keep(out, writeManifest(out, freshManifest(members, new Map(), 1), true)!);
  const first = cache.take(out)!;
  const firstMemory = first.profiles.base.bytes.buffer;
  // The next build changes one entry over the table it took, and commits.
  first.profiles.set('bo', memberEntry('bo', 7));
  members.set('bo', memberEntry('bo', 7));
  const names = [...members.keys()];
  const list = { names, lengths: names.map((name) => lengthOf(members.get(name)!)), entries: names.map((name) => members.get(name)!) };
  cache.keep(out, writeManifest(out, { ...first, list }, true)!, first.profiles.base);
  expect(() => first.profiles.get('ann'), 'a retired table is never read again').toThrow(/bug: a manifest table was used/);
  const second = cache.take(out)!;
  expect(second.profiles.base.bytes.buffer).toBe(firstMemory);
  expect(new Map(second.profiles)).toEqual(members);
});

it("notes each manifest's rows into the columns of the table retired a cycle before it", () => {
  const out = outDir('columns');
  const cache = new ManifestCache();
  const retire = vi.spyOn(EntryTable.prototype, 'retire');
  const members = new Map(['ann', 'bo', 'cy', 'dee', 'eve'].map((name) => [name, memberEntry(name, 0)]));
  cache.keep(out, writeManifest(out, freshManifest(members, new Map(), 1), true)!);
  for (let cycle = 1; cycle <= 4; cycle++) {
    const taken = cache.take(out)!;
    expect(new Map(taken.profiles)).toEqual(members);
    taken.profiles.set('bo', memberEntry('bo', cycle));
    members.set('bo', memberEntry('bo', cycle));
    const names = [...members.keys()];
    const list = { names, lengths: names.map((name) => lengthOf(members.get(name)!)), entries: names.map((name) => members.get(name)!) };
    cache.keep(out, writeManifest(out, { ...taken, list }, true)!, taken.profiles.base);
  }
  expect(new Map(cache.take(out)!.profiles)).toEqual(members);
  // Two sets of columns take turns: the table read in a cycle was noted into the columns of the
  // table retired two cycles before, not into fresh memory.
  const retired = retire.mock.results.map((result) => result.value as RetiredTable);
  expect(retired).toHaveLength(4);
  for (const column of ['lineStarts', 'nameLengths', 'memberLengths'] as const) {
    expect(retired[2]!.columns[column].buffer).toBe(retired[0]!.columns[column].buffer);
    expect(retired[3]!.columns[column].buffer).toBe(retired[1]!.columns[column].buffer);
    expect(retired[1]!.columns[column].buffer).not.toBe(retired[0]!.columns[column].buffer);
  }
  retire.mockRestore();
});
