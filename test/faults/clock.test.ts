/**
 * The clock jumps backwards (issue 7.2): between builds (SOURCE_DATE_EPOCH earlier than the last
 * build's, even earlier than some accounts' creation), and under a running watcher (the fault preload
 * moves Date.now and new Date() back 400 days on SIGUSR2). Nothing stalls, nothing is kept from the
 * "future", the output stays schema-valid, and no account age goes negative.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startCli } from '../helpers/process.js';
import { publishedFiles } from '../helpers/output.js';
import { validateTree } from '../helpers/schemas.js';
import { BASE, buildArgs, cli, INJECT, makeStore, servedBytes } from './helpers.js';
import { eachTestWorkspace, type Workspace } from '../helpers/store.js';

let dir: Workspace['dir'];
let db: string;
let out: string;
eachTestWorkspace((w) => ({ dir, db, out } = w), { out: 'out', prefix: 'ps-faults-' });

const DAY = 86_400;
const profiles = (tree: string) =>
  publishedFiles(tree)
    .filter((f) => f.startsWith('api/v1/users/'))
    .map((f) => JSON.parse(readFileSync(join(tree, f), 'utf8')));

function expectSameAsFresh(epoch: number): void {
  const refOut = join(dir.path, `ref-${epoch}`);
  expect(cli(buildArgs(db, refOut), undefined, { SOURCE_DATE_EPOCH: String(epoch) }).code).toBe(0);
  const want = servedBytes(refOut);
  const got = servedBytes(out);
  expect([...got.keys()]).toEqual([...want.keys()]);
  // Error documents carry no data that depends on time: by design they keep their bytes (and the
  // meta of the build that first wrote them), like every document whose data did not change.
  for (const [f, bytes] of want)
    if (!f.startsWith('_errors/') && got.get(f) !== bytes) throw new Error(`${f} differs from a fresh build at ${epoch}`);
}

describe('clock jumps backwards', () => {
  it('SOURCE_DATE_EPOCH before the last build and before the accounts were created: exactly a fresh build at that time, ages 0, schema-valid; and forward again', () => {
    makeStore(db, 40); // created 2024-01-01
    const later = 1_767_225_600; // 2026-01-01
    const earlier = 1_672_531_200; // 2023-01-01, before every account
    expect(cli(buildArgs(db, out), undefined, { SOURCE_DATE_EPOCH: String(later) }).code).toBe(0);
    expect(profiles(out).every((p) => p.data.accountAgeDays === 731)).toBe(true);

    const back = cli([...buildArgs(db, out), '--json'], undefined, { SOURCE_DATE_EPOCH: String(earlier) });
    expect(back.code, back.stderr).toBe(0);
    expect(validateTree(out)).toEqual([]);
    const docs = profiles(out);
    expect(docs.every((p) => p.data.accountAgeDays === 0 && p.meta.timestamp === '2023-01-01T00:00:00.000Z')).toBe(true);
    expectSameAsFresh(earlier);

    expect(cli(buildArgs(db, out), undefined, { SOURCE_DATE_EPOCH: String(later + DAY) }).code).toBe(0);
    expectSameAsFresh(later + DAY);
  });

  it('a build waiting for the out dir lock while the wall clock runs backwards still gives up after its wait: exit 5 naming the holder, not stuck', async () => {
    makeStore(db, 10);
    const statusFile = join(out, '.profile-snapshot/status.json');
    const holder = startCli(['watch', '--db', db, '--out', out, '--base-url', BASE, '--interval', '600']);
    try {
      const deadline = Date.now() + 30_000;
      while (!existsSync(statusFile)) {
        if (Date.now() > deadline) throw new Error('the watcher never started');
        await new Promise((r) => setTimeout(r, 50));
      }
      // The default lock wait is 5 s; a wait measured on the wall clock would never end.
      const r = cli(buildArgs(db, out), { FAULT_CLOCK_RATE: '-1' }, {}, 25_000);
      expect(r.signal, 'the build was still waiting when the harness gave up').toBeNull();
      expect(r.code, r.stderr).toBe(5);
      expect(r.stderr).toMatch(new RegExp(`locked by pid ${holder.pid}`));
    } finally {
      await holder.stop();
    }
  });

  it('the wall clock of a running watcher jumps back 400 days: cycles go on, output follows the clock, stays schema-valid, no negative ages', async () => {
    makeStore(db, 40);
    const statusFile = join(out, '.profile-snapshot/status.json');
    const status = () => {
      try {
        return existsSync(statusFile) ? JSON.parse(readFileSync(statusFile, 'utf8')) : undefined;
      } catch {
        return undefined;
      }
    };
    const watcher = startCli(['watch', '--db', db, '--out', out, '--base-url', BASE, '--interval', '0.2'], {
      nodeArgs: ['--import', INJECT],
      env: { FAULT_CLOCK_SHIFT_MS: String(-400 * DAY * 1000) },
    });
    const waitFor = async (what: string, ok: () => boolean) => {
      const deadline = Date.now() + 30_000;
      while (!ok()) {
        if (Date.now() > deadline || watcher.child.exitCode !== null) throw new Error(`${what}: ${watcher.stderr()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    try {
      await waitFor('two cycles', () => (status()?.lastCycle?.number ?? 0) >= 2);
      const ageBefore = profiles(out)[0].data.accountAgeDays;
      const cycle = status().lastCycle.number;
      watcher.child.kill('SIGUSR2');
      await waitFor('the clock to move', () => watcher.stderr().includes('clock shifted'));
      await waitFor('three more cycles', () => (status()?.lastCycle?.number ?? 0) >= cycle + 3);
      const s = status();
      expect(s.consecutiveFailures, watcher.stderr()).toBe(0);
      expect(s.lastCycle.ok).toBe(true);
      expect(validateTree(out)).toEqual([]);
      const docs = profiles(out);
      // The documents follow the clock back: 400 days younger (at most 0), stamped 400 days earlier.
      expect(
        docs.every((p) => p.data.accountAgeDays === Math.max(0, ageBefore - 400) || p.data.accountAgeDays === Math.max(0, ageBefore - 399)),
      ).toBe(true);
      expect(docs.every((p) => Date.parse(p.meta.timestamp) < Date.now() - 399 * DAY * 1000)).toBe(true);
    } finally {
      await watcher.stop();
    }
    expect(watcher.child.exitCode, watcher.stderr()).toBe(0);
  });
});
