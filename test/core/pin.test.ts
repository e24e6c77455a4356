/**
 * A pinned generation of the tree (src/output/pin.ts): while the out dir's lock holder keeps
 * committing builds (documents rewritten, removed, added again, the creators list and its variant
 * replaced), a reader of the pin still gets every byte of the generation it pinned, and the pin
 * costs nothing once released. Real SQLite stores and real builds.
 */
import { readdirSync, readFileSync, existsSync, closeSync, fstatSync, readSync, mkdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { build } from '../../src/build.js';
import { OutDirLock } from '../../src/output/lock.js';
import { PinKeeper, TreePin } from '../../src/output/pin.js';
import { readLocalTree } from '../../src/publish/plan/local.js';
import { SNAPSHOT_MS } from '../helpers/build.js';
import { execSql, tempDir, TestStore, userName } from '../helpers/store.js';
import { ensureCompiled, REPO } from '../watch/helpers.js';

const DAY_MS = 86_400_000;

/** Every file of the tree (the tool's bookkeeping apart, but for the manifest and the variant's index), by path. */
function treeFiles(out: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      const rel = relative(out, path);
      if (entry.isDirectory()) {
        if (rel !== '.profile-snapshot') walk(path);
      } else files.set(rel, readFileSync(path));
    }
  };
  walk(out);
  for (const rel of ['.profile-snapshot/manifest', '.profile-snapshot/creators-gzip-index'])
    if (existsSync(join(out, rel))) files.set(rel, readFileSync(join(out, rel)));
  return files;
}

function readThrough(pin: TreePin, path: string): Buffer | undefined {
  const fd = pin.open(path);
  if (fd === undefined) return undefined;
  try {
    const bytes = Buffer.alloc(fstatSync(fd).size);
    readSync(fd, bytes, 0, bytes.length, 0);
    return bytes;
  } finally {
    closeSync(fd);
  }
}

describe('a pinned generation of the tree', () => {
  let cleanup: (() => void) | undefined;
  afterEach(() => cleanup?.());
  beforeAll(() => ensureCompiled(), 120_000);

  function setup() {
    const dir = tempDir();
    cleanup = dir.cleanup;
    const db = join(dir.path, 'profiles.db');
    const store = new TestStore(db);
    store.users(40, (id) => ({
      user: { username: userName(id), bio: `bio ${id}`, views: id },
      socials: [['GitHub', `https://github.com/u${id}`, 1]],
    }));
    store.close();
    const out = join(dir.path, 'dist');
    const lock = OutDirLock.acquire(out, { command: 'watch' });
    const cycle = (atMs: number) => build({ db, out, baseUrl: 'https://p.example.com', snapshotMs: atMs, reproducible: true }, { lock });
    const sql = (text: string) => execSql(db, text);
    return { out, lock, cycle, sql };
  }

  it('reads every byte of the pinned generation while later commits replace, remove and re-add documents', () => {
    const { out, lock, cycle, sql } = setup();
    try {
      cycle(SNAPSHOT_MS);
      const pinned = treeFiles(out);
      const pin = TreePin.take(out);
      // Three more commits: edits, a removal, a new user, a rename, a user removed and one added
      // again, and a day later (ages turn, the list and its variant rewritten).
      sql(`UPDATE users SET bio = 'changed' WHERE id <= 5; DELETE FROM socials WHERE user_id = 6; DELETE FROM users WHERE id = 6`);
      sql(
        `INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (41, 'newcomer', 'New', '', '2020-01-01 00:00:00', 0, 'active')`,
      );
      expect(cycle(SNAPSHOT_MS + 1000).files.written).toBeGreaterThan(0);
      sql(`UPDATE users SET username = 'renamed' WHERE id = 7; UPDATE users SET bio = 'again' WHERE id = 1`);
      sql(
        `INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (6, '${userName(6)}', 'Back', '', '2020-01-01 00:00:00', 0, 'active')`,
      );
      expect(cycle(SNAPSHOT_MS + 2000).files.written).toBeGreaterThan(0);
      // Kept so far: what those commits replaced or removed (a few profiles' aliases, the list, ...), not the tree.
      expect(treeFiles(pin.root).size).toBeLessThan(pinned.size / 2);
      expect(cycle(SNAPSHOT_MS + DAY_MS).files.written).toBeGreaterThan(0);

      const now = treeFiles(out);
      expect(now.get(`api/v1/users/${userName(1)}`)).not.toEqual(pinned.get(`api/v1/users/${userName(1)}`));
      expect(now.get('service-api/v1/creators')).not.toEqual(pinned.get('service-api/v1/creators'));
      for (const [path, bytes] of pinned) {
        if (path.startsWith('.profile-snapshot/')) expect(readFileSync(join(pin.root, path)), path).toEqual(bytes);
        else expect(readThrough(pin, path), path).toEqual(bytes);
      }
      // A publish reads it as the generation it is: its manifest, and the files that manifest names.
      const tree = readLocalTree(pin, 0);
      expect(tree.profiles.has(userName(6))).toBe(true);
      expect(tree.profiles.has('newcomer')).toBe(false);
      expect(tree.profiles.has(userName(7))).toBe(true);
      pin.release();
      expect(existsSync(pin.root)).toBe(false);
      // Without a pin, a commit keeps nothing.
      sql(`UPDATE users SET bio = 'later' WHERE id = 2`);
      cycle(SNAPSHOT_MS + DAY_MS + 1000);
      expect(existsSync(pin.root)).toBe(false);
    } finally {
      lock.release();
    }
  });

  it("is its holder's alone: the lock's next holder removes a pin its last holder left", () => {
    const { out, lock, cycle } = setup();
    cycle(SNAPSHOT_MS);
    const pin = TreePin.take(out);
    mkdirSync(join(pin.root, 'api/v1/users'), { recursive: true });
    writeFileSync(join(pin.root, 'api/v1/users/left'), '{}');
    lock.release(); // as if killed: the pin stays behind
    expect(existsSync(pin.root)).toBe(true);
    OutDirLock.acquire(out, { command: 'build' }).release();
    expect(existsSync(pin.root)).toBe(false);
  });

  it('never misses a document a commit removes while another thread opens it or asks for it through the pin (raced, many rounds)', async () => {
    const dir = tempDir();
    cleanup = dir.cleanup;
    const out = join(dir.path, 'dist');
    const path = 'api/v1/users/racer';
    mkdirSync(join(out, 'api/v1/users'), { recursive: true });
    let pin = TreePin.take(out);
    // [sequence (odd: the document is in the out dir or the pin), stop, misses, reads]
    const state = new Int32Array(new SharedArrayBuffer(16));
    const reader = new Worker(
      `const { workerData } = require('node:worker_threads');
       const { closeSync } = require('node:fs');
       import(workerData.module).then(({ TreePin }) => {
         const state = new Int32Array(workerData.shared);
         const pin = TreePin.attach(workerData.out);
         while (Atomics.load(state, 1) === 0) {
           const before = Atomics.load(state, 0);
           if ((before & 1) === 0) continue;
           const fd = pin.open(workerData.path);
           if (fd !== undefined) closeSync(fd);
           const seen = fd !== undefined && pin.has(workerData.path);
           if (!seen && Atomics.load(state, 0) === before) Atomics.add(state, 2, 1);
           Atomics.add(state, 3, 1);
         }
       });`,
      { eval: true, workerData: { module: pathToFileURL(join(REPO, 'build/output/pin.js')).href, shared: state.buffer, out, path } },
    );
    // A spin, not a wait: the reader must be reading at the moment of the commit, not woken after it.
    const readsPast = (count: number) => {
      const until = Atomics.load(state, 3) + count;
      const deadline = Date.now() + 10_000;
      while (Atomics.load(state, 3) < until) if (Date.now() > deadline) throw new Error('the reader thread does not read');
    };
    try {
      for (let round = 0; round < 2000; round++) {
        writeFileSync(join(out, path), `round ${round}`);
        Atomics.add(state, 0, 1);
        readsPast(2);
        // A commit removing the document: kept in the pin first, then gone from the out dir.
        PinKeeper.of(out)!.keep(path);
        unlinkSync(join(out, path));
        readsPast(2);
        Atomics.add(state, 0, 1);
        pin.release();
        pin = TreePin.take(out);
      }
    } finally {
      Atomics.store(state, 1, 1);
      await reader.terminate();
      pin.release();
    }
    // Each round's reads straddle the removal (readsPast). Looking into the pin first, then the out
    // dir, missed it in about one round in nine (open) and one in a hundred (has).
    expect(Atomics.load(state, 2)).toBe(0);
  }, 60_000);
});
