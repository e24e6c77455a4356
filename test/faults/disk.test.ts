/**
 * Disk full and a read-only out dir (issue 7.2): the build fails with exit 5 and a message naming the
 * cause, the previous output stays byte for byte as it was (bookkeeping included), nothing is left in
 * the staging folder, and once the fault is gone the next build is exactly a fresh build.
 *
 * Real faults where the machine allows it (a size-limited tmpfs, a read-only bind mount: needs root
 * with mount rights, as on this project's CI machines); injected faults at the write layer always
 * (fixtures/inject.mjs: ENOSPC after N bytes, EROFS, EACCES), since root ignores permission bits.
 */
import { readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildArgs, changeStore, cli, expectClearError, makeStore, servedBytes, tempDir, treeBytes } from './helpers.js';
import { canMount, mountTmpfs, sh } from '../helpers/mount.js';
import { execSql } from '../helpers/store.js';

let dir: ReturnType<typeof tempDir>;
const mounts: string[] = [];
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => {
  for (const m of mounts.splice(0).reverse()) sh('umount', '-l', m);
  dir.cleanup();
});

/** A fresh build of `db` in a folder of its own: what the tree must converge to. */
function reference(db: string): Map<string, string> {
  const out = join(dir.path, `reference-${Math.random().toString(36).slice(2)}`);
  const r = cli(buildArgs(db, out));
  expect(r.code, r.stderr).toBe(0);
  return servedBytes(out);
}

/** The failed build left the tree exactly as it was, bookkeeping included, and no staging folder. */
function expectUntouched(out: string, before: Map<string, string>): void {
  const after = treeBytes(out);
  expect([...after.keys()]).toEqual([...before.keys()]);
  for (const [f, bytes] of before) if (after.get(f) !== bytes) throw new Error(`${f} changed by a failed build`);
  // Besides the manifest, only the record of the last pass (incremental/last-pass.ts) may remain.
  expect(
    readdirSync(join(out, '.profile-snapshot'))
      .filter((f) => f !== 'last-pass.json' && f !== 'creators-gzip-index')
      .sort(),
  ).toEqual(['manifest']);
}

function expectConverged(out: string, db: string): void {
  const r = cli(buildArgs(db, out));
  expect(r.code, r.stderr).toBe(0);
  const want = reference(db);
  const got = servedBytes(out);
  expect([...got.keys()]).toEqual([...want.keys()]);
  for (const [f, bytes] of want) if (got.get(f) !== bytes) throw new Error(`${f} differs from a fresh build`);
  // Besides the manifest, only the record of the last pass (incremental/last-pass.ts) may remain.
  expect(
    readdirSync(join(out, '.profile-snapshot'))
      .filter((f) => f !== 'last-pass.json' && f !== 'creators-gzip-index')
      .sort(),
  ).toEqual(['manifest']);
}

describe('disk full', () => {
  it.skipIf(!canMount)(
    'on a real 4 MB tmpfs: exit 5 naming ENOSPC, previous output intact; freeing space lets the next build converge',
    () => {
      const db = join(dir.path, 'profiles.db');
      makeStore(db, 300, { bioBytes: 2000 });
      const mnt = mountTmpfs(join(dir.path, 'mnt'), '4m');
      mounts.push(mnt);
      const out = join(mnt, 'out');
      const first = cli(buildArgs(db, out));
      expect(first.code, first.stderr).toBe(0);
      const before = treeBytes(out);

      // Leave less room than a rebuild of every profile needs.
      const free = () => {
        const s = statfsSync(mnt);
        return s.bavail * s.bsize;
      };
      writeFileSync(join(mnt, 'filler'), Buffer.alloc(Math.max(0, free() - 300_000)));
      expect(free()).toBeLessThan(400_000);
      changeStore(db);
      const full = cli(buildArgs(db, out));
      expect(full.code, full.stderr).toBe(5);
      expect(expectClearError(full.stderr, /ENOSPC|no space left/)).toEqual([]);
      expect(full.stderr).toMatch(/free disk space/);
      expectUntouched(out, before);

      rmSync(join(mnt, 'filler'));
      expectConverged(out, db);
    },
  );

  it('injected ENOSPC at many points of a rebuild (staging, creators list, manifest): exit 5, and the tree is the previous one or, past the last rename, the new one; never a mix', () => {
    const db = join(dir.path, 'profiles.db');
    makeStore(db, 200, { bioBytes: 300 });
    const out = join(dir.path, 'out');
    expect(cli(buildArgs(db, out)).code).toBe(0);
    // How many bytes a complete rebuild writes, counted by a run that fails nothing, on a second tree
    // built the same way from the same store (a copied tree would not do: a rebuild copies unchanged
    // list members from the last list file only when that file is the very one the manifest names).
    const scratch = join(dir.path, 'scratch');
    expect(cli(buildArgs(db, scratch)).code).toBe(0);
    changeStore(db);
    const after = reference(db);

    const countFile = join(dir.path, 'count');
    const before = treeBytes(out);
    const counted = cli(buildArgs(db, scratch), { FAULT_OUT: scratch, FAULT_COUNT_FILE: countFile });
    expect(counted.code, counted.stderr).toBe(0);
    const total = Number(readFileSync(countFile, 'utf8').split(' ')[1]);
    expect(total).toBeGreaterThan(50_000);

    // The last write a rebuild can fail on is the final manifest, after every rename: only a budget
    // that runs out inside it may leave the new tree (whole) rather than the previous one. The
    // records written after it (the variant's piece index, the last pass) are best effort.
    const state = (file: string) => statSync(join(scratch, '.profile-snapshot', file)).size;
    const finalManifest = state('manifest');
    const manifestEnd = total - state('creators-gzip-index') - state('last-pass.json');
    const outcomes: string[] = [];
    const expected: string[] = [];
    const inFinalManifest = manifestEnd - Math.floor(finalManifest / 2);
    for (const budget of [0, 0.3, 0.7, 0.95].map((fraction) => Math.floor(total * fraction)).concat(inFinalManifest)) {
      expected.push(budget < manifestEnd - finalManifest ? 'previous' : 'previous or new');
      const r = cli(buildArgs(db, out), { FAULT_OUT: out, FAULT_ENOSPC_AFTER: String(budget) });
      expect(r.code, `budget ${budget}: ${r.stderr}`).toBe(5);
      expect(expectClearError(r.stderr, /ENOSPC|no space left/), `budget ${budget}`).toEqual([]);
      const served = servedBytes(out);
      const same = (want: Map<string, string>) => served.size === want.size && [...want].every(([f, b]) => served.get(f) === b);
      if (same(new Map([...before].filter(([f]) => !f.startsWith('.profile-snapshot/'))))) {
        expectUntouched(out, before);
        outcomes.push('previous');
      } else {
        // Only the final manifest write can fail after the renames: every file is the new one.
        expect(same(after), `budget ${budget}: a mix of old and new files`).toBe(true);
        outcomes.push('new');
      }
    }
    expect(outcomes.map((o, i) => (expected[i] === 'previous' ? o : expected[i]))).toEqual(expected);
    expect(outcomes.filter((o) => o === 'previous').length).toBeGreaterThanOrEqual(3);
    expectConverged(out, db);
  });
});

describe("SQLite's temporary folder full", () => {
  it.skipIf(!canMount)(
    'a real 1 MB tmpfs as SQLITE_TMPDIR: exit 3 naming it with a fix, never an internal error; the tree untouched',
    () => {
      const db = join(dir.path, 'profiles.db');
      makeStore(db, 300);
      const out = join(dir.path, 'out');
      expect(cli(buildArgs(db, out)).code).toBe(0);
      const before = treeBytes(out);
      // Without its index the socials are sorted in a temporary file: 300 URLs of 40 KB outgrow both
      // the read's 2 MB cache and the 1 MB folder.
      execSql(db, "DROP INDEX socials_by_user; UPDATE socials SET url = 'https://example.com/' || hex(zeroblob(20000))");
      const tmp = mountTmpfs(join(dir.path, 'sqlite-tmp'), '1m');
      mounts.push(tmp);
      const r = cli(buildArgs(db, out), undefined, { SQLITE_TMPDIR: tmp });
      expect(r.code, r.stderr).toBe(3);
      expect(
        expectClearError(r.stderr, /SQLite's temporary folder is full .*SQLITE_FULL.*point SQLITE_TMPDIR at a folder with room/),
      ).toEqual([]);
      expectUntouched(out, before);
    },
  );
});

describe('read-only out dir', () => {
  it.skipIf(!canMount)(
    'a real read-only bind mount: exit 5 naming EROFS, the tree untouched; writable again, the next build converges',
    () => {
      const db = join(dir.path, 'profiles.db');
      makeStore(db, 50);
      const out = join(dir.path, 'out');
      expect(cli(buildArgs(db, out)).code).toBe(0);
      const before = treeBytes(out);
      expect(sh('mount', '--bind', out, out).status).toBe(0);
      mounts.push(out);
      expect(sh('mount', '-o', 'remount,ro,bind', out).status).toBe(0);
      expect(() => writeFileSync(join(out, 'probe'), 'x')).toThrow(/EROFS/);
      changeStore(db);
      const r = cli(buildArgs(db, out));
      expect(r.code, r.stderr).toBe(5);
      expect(expectClearError(r.stderr, /EROFS|read-only/)).toEqual([]);
      expect(r.stderr).toMatch(/writable/);
      expectUntouched(out, before);
      expect(sh('umount', out).status).toBe(0);
      mounts.pop();
      expectConverged(out, db);
    },
  );

  it('the out dir turns read-only in the middle of a build (injected EROFS from the 10th, 20th, 40th change on): exit 5 naming EROFS, never an internal error; writable again, the next build converges', () => {
    const db = join(dir.path, 'profiles.db');
    makeStore(db, 50);
    const out = join(dir.path, 'out');
    expect(cli(buildArgs(db, out)).code).toBe(0);
    const previous = servedBytes(out);
    changeStore(db);
    for (const after of [10, 20, 40]) {
      const r = cli(buildArgs(db, out), { FAULT_OUT: out, FAULT_ERRNO: 'EROFS', FAULT_ERRNO_AFTER: String(after) });
      expect(r.code, `from change ${after}: ${r.stderr}`).toBe(5);
      expect(expectClearError(r.stderr, /EROFS/), `from change ${after}`).toEqual([]);
      // Still staging when the disk turned read-only: nothing published changed.
      const served = servedBytes(out);
      for (const [f, bytes] of previous) if (served.get(f) !== bytes) throw new Error(`${f} changed (from change ${after})`);
    }
    expectConverged(out, db);
  });

  for (const errno of ['EROFS', 'EACCES'] as const) {
    it(`injected ${errno} on every change under the out dir: exit 5 naming it, the tree untouched`, () => {
      const db = join(dir.path, 'profiles.db');
      makeStore(db, 50);
      const out = join(dir.path, 'out');
      expect(cli(buildArgs(db, out)).code).toBe(0);
      const before = treeBytes(out);
      changeStore(db);
      const r = cli(buildArgs(db, out), { FAULT_OUT: out, FAULT_ERRNO: errno });
      expect(r.code, r.stderr).toBe(5);
      expect(expectClearError(r.stderr, new RegExp(errno))).toEqual([]);
      expectUntouched(out, before);
      expectConverged(out, db);
    });
  }
});
