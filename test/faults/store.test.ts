/**
 * The store misbehaving under a build (issue 7.2): replaced, truncated, or locked exclusively by
 * another process, before or in the middle of the pass. The mid-run faults are fired by the fault
 * preload at the build's fifth staged file (fixtures/inject.mjs FAULT_ON_STAGE), i.e. after the first
 * rows have been read and long before the pass is over, so they land at a known point.
 *
 * Whatever happens, the build either publishes one consistent snapshot (exit 0) or fails with exit 3
 * and a clear message, leaving the previous output byte for byte as it was.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildArgs, changeStore, cli, expectClearError, makeStore, servedBytes, tempDir, treeBytes } from './helpers.js';
import { startNode, type Proc } from '../helpers/process.js';

const HOLD = fileURLToPath(new URL('./fixtures/hold-store.mjs', import.meta.url));

let dir: ReturnType<typeof tempDir>;
let db: string;
let out: string;
const holders: Proc[] = [];
beforeEach(() => {
  dir = tempDir();
  db = join(dir.path, 'profiles.db');
  out = join(dir.path, 'out');
});
afterEach(async () => {
  for (const holder of holders.splice(0)) {
    holder.child.kill('SIGKILL');
    await holder.exit;
  }
  dir.cleanup();
});

/** A fresh build of a copy of `file` as it is now (the copy is taken here, not later). */
function referenceOf(file: string): Map<string, string> {
  const copy = join(dir.path, `ref-${Math.random().toString(36).slice(2)}.db`);
  copyFileSync(file, copy);
  const refOut = `${copy}.out`;
  const r = cli(buildArgs(copy, refOut));
  expect(r.code, r.stderr).toBe(0);
  return servedBytes(refOut);
}

function expectSame(got: Map<string, string>, want: Map<string, string>, what: string): void {
  expect([...got.keys()], what).toEqual([...want.keys()]);
  for (const [f, bytes] of want) if (got.get(f) !== bytes) throw new Error(`${what}: ${f} differs`);
}

function expectUntouched(before: Map<string, string>): void {
  expectSame(treeBytes(out), before, 'the tree after a failed build');
  // No lock, staging folder or anything else left behind: the tool's own files are the last build's.
  expect(readdirSync(join(out, '.profile-snapshot')).sort()).toEqual(['creators-gzip-index', 'last-pass.json', 'manifest']);
}

/**
 * A store of about 1 MB: when the fault lands, the pass has read only its first pages, so the rest
 * must come from the file (SQLite's page cache holds only pages already read).
 */
function bigStore(journal: 'wal' | 'delete'): void {
  makeStore(db, 700, { bioBytes: 1200, journal });
  const first = cli(buildArgs(db, out));
  expect(first.code, first.stderr).toBe(0);
  changeStore(db);
  expect(statSync(db).size).toBeGreaterThan(900_000);
}

function hold(mode: 'txn' | 'locking'): { proc: Proc; signals: string } {
  const signals = join(dir.path, `signals-${holders.length}`);
  mkdirSync(signals);
  const proc = startNode([HOLD, db, mode, signals]);
  holders.push(proc);
  return { proc, signals };
}

async function waitFile(path: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`${path} never appeared`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('store replaced, truncated or locked during a build', () => {
  it('truncated mid-run: exit 3 naming the store, previous output intact; restored, the next build converges', () => {
    bigStore('delete');
    const intact = join(dir.path, 'intact.db');
    copyFileSync(db, intact);
    const before = treeBytes(out);
    const r = cli(buildArgs(db, out), { FAULT_OUT: out, FAULT_ON_STAGE: `truncate -s 65536 '${db}'` });
    expect(r.code, r.stderr).toBe(3);
    expect(expectClearError(r.stderr, /profile store/)).toEqual([]);
    expectUntouched(before);

    copyFileSync(intact, db);
    expect(cli(buildArgs(db, out)).code).toBe(0);
    expectSame(servedBytes(out), referenceOf(db), 'after the store was restored');
  });

  it('truncated to nothing before the run: exit 3, previous output intact', () => {
    bigStore('delete');
    const before = treeBytes(out);
    writeFileSync(db, '');
    const r = cli(buildArgs(db, out));
    expect(r.code, r.stderr).toBe(3);
    expect(expectClearError(r.stderr, /profile store|SQLite/)).toEqual([]);
    expectUntouched(before);
  });

  it('replaced mid-run (rename over it, WAL): the build publishes the snapshot it started from, whole; the next build publishes the new store', () => {
    bigStore('wal');
    const started = referenceOf(db);
    const next = join(dir.path, 'next.db');
    copyFileSync(db, next);
    changeStore(next, 2);
    const replacement = referenceOf(next);
    const r = cli(buildArgs(db, out), { FAULT_OUT: out, FAULT_ON_STAGE: `cp '${next}' '${db}.new' && mv '${db}.new' '${db}'` });
    expect(r.code, r.stderr).toBe(0);
    expectSame(servedBytes(out), started, 'the build during the replacement');
    expect(cli(buildArgs(db, out)).code).toBe(0);
    expectSame(servedBytes(out), replacement, 'the build after the replacement');
  });

  for (const [mode, journal] of [
    ['txn', 'delete'],
    ['locking', 'wal'],
  ] as const) {
    it(`locked exclusively by another process before the run (${mode === 'txn' ? 'BEGIN EXCLUSIVE, rollback journal' : 'locking_mode EXCLUSIVE, WAL'}): exit 3 after --busy-timeout, naming the lock; previous output intact`, async () => {
      bigStore(journal);
      const before = treeBytes(out);
      const holder = hold(mode);
      writeFileSync(join(holder.signals, 'go'), '');
      await waitFile(join(holder.signals, 'locked'));
      const r = cli(buildArgs(db, out, '--busy-timeout', '300'));
      expect(r.code, r.stderr).toBe(3);
      expect(expectClearError(r.stderr, /locked/)).toEqual([]);
      expect(r.stderr).toMatch(/busy-timeout/);
      expectUntouched(before);
    });
  }

  for (const journal of ['delete', 'wal'] as const) {
    it(`locked exclusively by another process mid-run (${journal}): the build finishes from its own snapshot, unaffected by the locker's write`, async () => {
      bigStore(journal);
      const started = referenceOf(db);
      const holder = hold('txn');
      // A few rows into the pass: let the locker go, and wait until it has the lock (WAL) or is
      // waiting for it (a rollback journal, where our read lock keeps it out until the pass is over).
      const wait = journal === 'wal' ? 'locked' : 'trying';
      const hook = `touch '${holder.signals}/go'; i=0; while [ ! -e '${holder.signals}/${wait}' ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i+1)); done; sleep 0.2`;
      const r = cli(buildArgs(db, out), { FAULT_OUT: out, FAULT_ON_STAGE: hook });
      expect(existsSync(join(holder.signals, wait)), 'the locker got going mid-run').toBe(true);
      expect(r.code, r.stderr).toBe(0);
      expectSame(servedBytes(out), started, 'the build while the store was locked');
      await waitFile(join(holder.signals, 'locked'));
      await holder.proc.stop();
    });
  }
});
