/**
 * A watcher (builds of one session, holding the out dir's lock) holds the creators list, its gzip
 * variant and the manifest each commit replaces until it writes their successors, so that it writes
 * into memory just freed (output/held-files.ts). A build that ends its process holds nothing, and
 * the lock's release, or its next holder, lets go of what was held.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { CREATORS_FILE, CREATORS_GZIP_FILE, HELD_DIR, MANIFEST_FILE } from '../../src/core/layout.js';
import { StoreSession } from '../../src/incremental/session.js';
import { holdReplaced } from '../../src/output/held-files.js';
import { OutDirLock } from '../../src/output/lock.js';
import { Staging } from '../../src/output/staging.js';
import { buildTo } from '../helpers/build.js';
import { changeStore, makeStore } from '../faults/helpers.js';
import { tempDir } from '../helpers/store.js';

let dir: ReturnType<typeof tempDir>;
let db: string;
let out: string;
beforeEach(() => {
  dir = tempDir();
  db = join(dir.path, 'profiles.db');
  out = join(dir.path, 'dist');
  makeStore(db, 200);
});
afterEach(() => dir.cleanup());

const held = () => {
  try {
    return new Map(readdirSync(join(out, HELD_DIR)).map((name) => [decodeURIComponent(name), statSync(join(out, HELD_DIR, name)).ino]));
  } catch {
    return new Map<string, number>();
  }
};
const inode = (path: string) => statSync(join(out, path)).ino;

it("holds what a watcher's commit replaced until the next cycle writes its successor, and no longer than its lock", () => {
  const session = new StoreSession(db);
  const lock = OutDirLock.acquire(out, { command: 'watch', waitMs: 0 });
  const files = [CREATORS_FILE, CREATORS_GZIP_FILE, MANIFEST_FILE];
  const inodes = () => new Map(files.map((file) => [file, inode(file)]));
  try {
    buildTo(db, out, { session, lock });
    const first = inodes();
    const firstBytes = files.map((file) => readFileSync(join(out, file)));
    changeStore(db, 1);
    buildTo(db, out, { session, lock });
    // The published files are new ones; those they replaced are held, unchanged but for the
    // manifest's claims, appended by this commit before it wrote the new one (writeClaims).
    for (const file of files) expect(inode(file)).not.toBe(first.get(file));
    expect(held()).toEqual(first);
    const heldBytes = files.map((file) => readFileSync(join(out, HELD_DIR, encodeURIComponent(file))));
    expect(heldBytes.slice(0, 2)).toEqual(firstBytes.slice(0, 2));
    expect(heldBytes[2]!.subarray(0, firstBytes[2]!.length)).toEqual(firstBytes[2]);
    expect(heldBytes[2]!.subarray(firstBytes[2]!.length).toString()).toMatch(/^\n(?:[uf]\t[^\t\n]+\t-\n)+$/);
    const second = inodes();
    changeStore(db, 2);
    buildTo(db, out, { session, lock });
    // The first cycle's files were let go of when their successors were written: one of each is held.
    expect(held()).toEqual(second);
    // The manifest written now has one link: the next commit's claims append to it in place.
    expect(statSync(join(out, MANIFEST_FILE)).nlink).toBe(1);
  } finally {
    lock.release();
    session.close();
  }
  expect(held().size).toBe(0);
});

it('a build that ends its process holds nothing, and a holder left behind is cleared by the next one', () => {
  buildTo(db, out);
  changeStore(db, 1);
  buildTo(db, out);
  expect(held().size).toBe(0);
  // As a watcher killed between two cycles leaves them.
  mkdirSync(join(out, HELD_DIR));
  writeFileSync(join(out, HELD_DIR, encodeURIComponent(CREATORS_GZIP_FILE)), 'left behind');
  const lock = OutDirLock.acquire(out, { command: 'build', waitMs: 0 });
  expect(held().size).toBe(0);
  lock.release();
});

it('lets go of a held file right before its successor is written, and of no other', () => {
  mkdirSync(out, { recursive: true });
  for (const path of ['variant', 'other']) {
    writeFileSync(join(out, path), `last ${path}`);
    holdReplaced(out, path);
  }
  const staging = Staging.create(out);
  staging.held.add('variant');
  const seen: Record<string, boolean> = {};
  for (const path of ['variant', 'other'])
    staging.streamedFile(path, 'hash', (sink) => {
      seen[path] = existsSync(join(out, HELD_DIR, path));
      sink.write('new');
    });
  expect(seen).toEqual({ variant: false, other: true });
  staging.discard();
});
