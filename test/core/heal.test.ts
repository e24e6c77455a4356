/**
 * `build --full` heals the tree: every file of its layout that is missing, truncated or altered on
 * disk is written again, even though the manifest says its data did not change, and the build says
 * how many it repaired. Checked through the real CLI against `verify` and against a fresh build of
 * the same store (SOURCE_DATE_EPOCH: a repaired file gets exactly the bytes a fresh build writes).
 */
import { readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BuildReport } from '../../src/build.js';
import { CREATORS_FILE, CREATORS_GZIP_FILE, errorFile, PROFILE_DIRS } from '../../src/core/layout.js';
import { sliceOf } from '../../src/core/slice.js';
import { SHARE_FROM } from '../../src/pass/threads.js';
import { publishedFiles } from '../helpers/output.js';
import { runCli, runCliAsync, startCli } from '../helpers/process.js';
import { ensureCompiled, status, waitFor } from '../watch/helpers.js';
import { eachTestWorkspace, sampleStore, TestStore, userName, type Workspace } from '../helpers/store.js';

let dir: Workspace['dir'];
let db: string;
let out: string;
eachTestWorkspace((w) => ({ dir, db, out } = w));

const ENV = { SOURCE_DATE_EPOCH: '1767225600' };
const [API_USERS, SERVICE_USERS] = PROFILE_DIRS;

function build(target: string, ...flags: string[]): { report: BuildReport; summary: string } {
  const run = runCli(['build', '--db', db, '--out', target, '--json', ...flags], { env: ENV, timeoutMs: 120_000 });
  expect(run.code, run.stderr).toBe(0);
  return { report: JSON.parse(run.stdout) as BuildReport, summary: run.stderr.trim().split('\n').at(-1)! };
}

const verify = () => runCli(['verify', '--out', out]);

/** Every published file of `out` is the same bytes as in a fresh build of the store, and no other file is. */
function expectAsFreshBuild(): void {
  const fresh = join(dir.path, 'fresh');
  build(fresh);
  const files = publishedFiles(fresh);
  expect(publishedFiles(out)).toEqual(files);
  for (const f of files) expect(readFileSync(join(out, f), 'utf8'), f).toBe(readFileSync(join(fresh, f), 'utf8'));
}

/** Damages the tree as an operator or a failing disk might; returns how many files it damaged. */
function damage(names: { deleted: string; aliasDeleted: string; edited: string }): number {
  rmSync(join(out, CREATORS_GZIP_FILE));
  rmSync(join(out, API_USERS, names.deleted));
  rmSync(join(out, SERVICE_USERS, names.aliasDeleted));
  truncateSync(join(out, CREATORS_FILE), statSync(join(out, CREATORS_FILE)).size - 40);
  // Edited in place: both aliases are one hard-linked file, so both change.
  const edited = join(out, API_USERS, names.edited);
  writeFileSync(edited, readFileSync(edited, 'utf8').replace('"views":', '"views":1'));
  const errors = join(out, errorFile('NOT_FOUND'));
  writeFileSync(errors, readFileSync(errors, 'utf8').replace('No API', 'no API'));
  return 1 + 1 + 1 + 1 + 2 + 1;
}

describe('build --full heals the tree', () => {
  it('restores a deleted gzip variant, profile and alias, a truncated list and edited files; verify then passes', () => {
    sampleStore(db);
    build(out);
    const damaged = damage({ deleted: 'alice', aliasDeleted: 'bob', edited: 'zoe' });

    const refused = verify();
    expect(refused.code).toBe(5);
    expect(refused.stderr).toContain('repair it with "profile-snapshot build --full"');
    // A plain build trusts the manifest: it repairs nothing.
    expect(build(out).report.repaired).toBeNull();
    expect(verify().code).toBe(5);

    const { report, summary } = build(out, '--full');
    expect(report.repaired).toBe(damaged);
    // Both aliases of each damaged profile, the list and its variant, the error document.
    expect(report.files).toMatchObject({ written: 2 * 3 + 3, removed: 0 });
    expect(summary).toContain(`, ${damaged} repaired;`);
    const audit = verify();
    expect(audit.code, audit.stderr).toBe(0);
    expectAsFreshBuild();

    const again = build(out, '--full');
    expect(again.report).toMatchObject({ repaired: 0, files: { written: 0 } });
    expect(again.summary).toContain(', 0 repaired;');
  });

  it('heals in a pass shared between threads, each share checking its own profiles', () => {
    const users = SHARE_FROM + 500;
    const store = new TestStore(db);
    store.users(users, (id) => ({ user: { username: userName(id), bio: `Bio ${id}`, views: id } }));
    store.close();
    expect(build(out, '--threads', '2').report.threads).toBe(2);
    const names = { deleted: userName(7), aliasDeleted: userName(users - 3), edited: userName(users >> 1) };
    expect(new Set(Object.values(names).map((name) => sliceOf(name, 2)))).toEqual(new Set([0, 1]));
    const damaged = damage(names);
    expect(verify().code).toBe(5);

    const { report } = build(out, '--full', '--threads', '2');
    expect(report).toMatchObject({ threads: 2, repaired: damaged });
    expect(verify().code).toBe(0);
    expectAsFreshBuild();
  }, 180_000);

  it('a watcher asked with regenerate --full heals its tree in that cycle, and only that one', async () => {
    ensureCompiled();
    sampleStore(db);
    const watcher = startCli(['watch', '--db', db, '--out', out, '--interval', '30'], { env: ENV });
    try {
      await waitFor('the first cycle', () => status(out)?.lastSuccess, 30_000);
      const damaged = damage({ deleted: 'alice', aliasDeleted: 'bob', edited: 'zoe' });
      const plain = await runCliAsync(['regenerate', '--out', out, '--json']);
      expect(plain.code, plain.stderr).toBe(0);
      expect(verify().code).toBe(5);

      const full = await runCliAsync(['regenerate', '--out', out, '--full', '--json']);
      expect(full.code, full.stderr).toBe(0);
      expect(JSON.parse(full.stdout)).toMatchObject({ ok: true, repaired: damaged });
      expect(full.stderr).toContain(`, ${damaged} repaired;`);
      const audit = verify();
      expect(audit.code, audit.stderr).toBe(0);
      expectAsFreshBuild();
      // The request is spent: the next cycle is a plain one again.
      const next = await runCliAsync(['regenerate', '--out', out, '--json']);
      expect(JSON.parse(next.stdout).repaired).toBeNull();
    } finally {
      await watcher.stop(10_000);
    }
  }, 120_000);
});
