/**
 * A watcher's selective pass carries most list members over from the last list, and the gzip
 * variant takes the pieces that lie whole in those runs from the last variant without hashing their
 * members (creators-gzip.ts CarriedPieces). Whatever it takes must be exactly what a fresh build
 * deflates: each case builds the list as a watcher does (cached manifest, carried members) and
 * compares its variant, byte for byte, with a fresh build's of the same members.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { fingerprint, fnv1a } from '../../src/core/hash.js';
import type { GzipPieces } from '../../src/output/creators-gzip.js';
import { CreatorsList } from '../../src/output/creators.js';
import type { Trust } from '../../src/output/diff.js';
import { ManifestCache } from '../../src/output/manifest-cache.js';
import { OutputTransaction } from '../../src/output/tree.js';
import { tempDir } from '../helpers/store.js';

/** What a watcher's passes trust of the last one: everything (same render key, no healing). */
const TRUST: Trust = Object.freeze({
  renderKey: 'test',
  healing: false,
  signaturesHold: () => true,
  mayCarryOver: () => true,
});

let dir: ReturnType<typeof tempDir>;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => dir.cleanup());

const name = (i: number) => `user${String(i).padStart(5, '0')}`;
const json = (i: number, version: number) => JSON.stringify({ username: name(i), bio: `bio ${i} ${'x'.repeat(i % 50)}`, views: version });

/**
 * A list kept as a watcher keeps it: each build carries over every member but the `changed` ones.
 * What each pass wrote is compared with fresh builds afterwards: the variant's pieces are taken
 * from the last variant only while the last index this process wrote is the watcher's.
 */
class Watcher {
  private readonly cache = new ManifestCache();
  private readonly out: string;
  private built = false;
  /** Each pass's users and the list and variant it wrote. */
  readonly passes: { users: Map<number, number>; list: Buffer; variant: Buffer }[] = [];

  constructor(
    readonly users: Map<number, number>,
    /** A shard's part: its pieces are cut by its members' data (creators-gzip.ts). */
    readonly partOfJoined = false,
  ) {
    this.out = join(dir.path, 'watched');
  }

  /** One pass: the users in `changed` are read again (gone when no longer in `users`). */
  pass(changed: Iterable<number>): GzipPieces {
    const tx = OutputTransaction.begin(this.out, { trust: TRUST, cache: this.cache });
    const list = new CreatorsList(tx, 'list');
    const read = this.built ? [...new Set(changed)] : [...this.users.keys()];
    if (this.built) {
      const carried = tx.carryOver(new Set(read.map(name)));
      expect(carried !== undefined && list.keepCarried(tx, carried), 'the pass carries members over').toBe(true);
    }
    for (const i of read.sort((a, b) => a - b)) {
      const version = this.users.get(i);
      if (version === undefined) continue;
      const text = json(i, version);
      tx.profile(name(i), fingerprint(text), 'signed', Buffer.byteLength(text), () => text);
      list.add(name(i), text, fingerprint(text));
    }
    const pieces = list.finish(tx, '{"data":', () => '}', { partOfJoined: this.partOfJoined });
    tx.commit();
    this.built = true;
    const files = { list: readFileSync(join(this.out, 'list')), variant: readFileSync(join(this.out, '.list.gz')) };
    this.passes.push({ users: new Map(this.users), ...files });
    return pieces!;
  }
}

/** The list and variant a fresh build of `users` writes (every piece deflated). */
function fresh(users: Map<number, number>, partOfJoined: boolean): { list: Buffer; variant: Buffer } {
  const out = join(dir.path, `fresh-${Math.random().toString(36).slice(2)}`);
  const tx = OutputTransaction.begin(out);
  const list = new CreatorsList(tx, 'list');
  for (const i of [...users.keys()].sort((a, b) => a - b)) {
    const text = json(i, users.get(i)!);
    tx.profile(name(i), fingerprint(text), 'signed', Buffer.byteLength(text), () => text);
    list.add(name(i), text, fingerprint(text));
  }
  expect(list.finish(tx, '{"data":', () => '}', { partOfJoined })!.reused).toBe(0);
  tx.commit();
  return { list: readFileSync(join(out, 'list')), variant: readFileSync(join(out, '.list.gz')) };
}

/** Each of the watcher's passes wrote a fresh build's files, byte for byte. */
function expectFresh(watcher: Watcher): void {
  for (const [at, { users, list, variant }] of watcher.passes.entries()) {
    const want = fresh(users, watcher.partOfJoined);
    expect(list.equals(want.list), `pass ${at}: the list`).toBe(true);
    expect(gunzipSync(variant).equals(list), `pass ${at}: the variant decodes to the list`).toBe(true);
    expect(variant.equals(want.variant), `pass ${at}: the variant is a fresh build's`).toBe(true);
  }
}

const USERS = 2000;
const everyone = () => new Map(Array.from({ length: USERS }, (_, i) => [i + 10, 0] as [number, number]));

it('plans more pieces than its arrays were first made for: every member ends a piece', () => {
  const ends = Array.from({ length: 8000 }, (_, i) => i).filter((i) => fnv1a(name(i)) % 16 === 0);
  const watcher = new Watcher(new Map(ends.slice(0, 400).map((i) => [i, 0])));
  expect(watcher.pass([]).pieces).toBe(400);
  const changed = ends[200]!;
  watcher.users.set(changed, 1);
  const cost = watcher.pass([changed]);
  expect(cost.pieces).toBe(400);
  expect(cost.byCarriedRuns).toBeGreaterThanOrEqual(400 - 6);
  expectFresh(watcher);
});

it.each([
  ['a whole list', false],
  ["a shard's part", true],
])('takes the pieces of carried runs from the last variant, and deflates only around what changed (%s)', (_label, partOfJoined) => {
  const watcher = new Watcher(everyone(), partOfJoined);
  const first = watcher.pass([]);
  expect(first.byCarriedRuns).toBe(0);
  for (let cycle = 1; cycle <= 4; cycle++) {
    const changed = [100 * cycle + 7, 1000 + cycle, 1900 - cycle];
    for (const i of changed) watcher.users.set(i, cycle);
    const cost = watcher.pass(changed);
    // Each change deflates its piece and at most the one whose dictionary it is in.
    expect(cost.pieces - cost.reused).toBeLessThanOrEqual(2 * changed.length);
    expect(cost.byCarriedRuns).toBeGreaterThan(cost.pieces - 4 * changed.length);
  }
  expectFresh(watcher);
});

it("deflates again the piece after a changed member that is in that piece's dictionary", () => {
  const watcher = new Watcher(everyone());
  watcher.pass([]);
  // A member that ends a piece by its name (creators-gzip.ts pieceMarks), the members before it,
  // which are the next piece's dictionary, and the one after it, each in turn.
  const end = [...watcher.users.keys()].find((i) => i > 700 && fnv1a(name(i)) % 16 === 0)!;
  for (let i = end - 4; i <= end + 1; i++) {
    watcher.users.set(i, watcher.users.get(i)! + 1);
    expect(watcher.pass([i]).byCarriedRuns).toBeGreaterThan(0);
  }
  expectFresh(watcher);
});

it('keeps no piece whose members or dictionary changed places: members gone, added, and first in the list', () => {
  const watcher = new Watcher(everyone());
  watcher.pass([]);
  const steps: (() => number[])[] = [
    () => [0, 1, 2].map((i) => (watcher.users.set(i, 0), i)), // new first members: every position moves
    () => [1].map((i) => (watcher.users.delete(i), i)), // gone from the first piece's dictionary
    () => [500, 501, 777].map((i) => (watcher.users.delete(i), i)),
    () => [500, 777].map((i) => (watcher.users.set(i, 3), i)), // back again
    () => [USERS + 10, USERS + 11].map((i) => (watcher.users.set(i, 0), i)), // after the last piece, which the list's end ended
    () => [USERS + 11].map((i) => (watcher.users.delete(i), i)),
    () => [5, 6, 7, 8, 9, 10, 11].map((i) => (watcher.users.set(i, 9), i)),
  ];
  for (const step of steps) {
    expect(watcher.pass(step()).byCarriedRuns).toBeGreaterThan(0);
  }
  expectFresh(watcher);
});
