/**
 * kill -9 at exact points of a build and of a watch cycle, repeated (issue 7.2). The fault preload
 * (fixtures/inject.mjs FAULT_KILL_AFTER=n) sends SIGKILL to the process just before its n-th change
 * under the out dir (a write, rename, link, unlink, mkdir or rm), with n drawn from a fixed seed over
 * every change a cycle makes: during staging, the manifest claim, the renames, the removals and the
 * final manifest. This complements test/watch/crash.test.ts, which kills a watcher at random *times*
 * under a busy writer.
 *
 * After every kill the tree is servable: each published file is whole and is either its previous or
 * its next version, no file that was published and still is has gone missing, and nothing temporary
 * is where it would be served. After the restart, the tree is exactly a fresh build, with no
 * temporary file, staging folder or stale lock left.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { prng } from '../../src/seed/synthetic.js';
import { startCli } from '../helpers/process.js';
import { BASE, buildArgs, changeStore, cli, EPOCH, INJECT, makeStore, servedBytes } from './helpers.js';
import { eachTestWorkspace, type Workspace } from '../helpers/store.js';

const ALLOWED =
  /^((api|service-api)\/v1\/users\/[a-z0-9_-][a-z0-9._-]*|service-api\/v1\/creators|service-api\/v1\/\.creators\.gz|api\/v1\/openapi\.json|_errors\/[a-z-]+\.json)$/;

let dir: Workspace['dir'];
let db: string;
let out: string;
eachTestWorkspace((w) => ({ dir, db, out } = w), { out: 'out', prefix: 'ps-faults-' });

function referenceOf(): Map<string, string> {
  const refOut = join(dir.path, `ref-${Math.random().toString(36).slice(2)}`);
  const r = cli(buildArgs(db, refOut));
  expect(r.code, r.stderr).toBe(0);
  return servedBytes(refOut);
}

/** Servable after a crash: every file whole, each one some version we published, none missing. */
function expectServable(versions: Map<string, string>[], mustHave: Set<string>): void {
  const served = servedBytes(out);
  for (const [f, bytes] of served) {
    if (!ALLOWED.test(f)) throw new Error(`${f} is served but is not a published path`);
    if (!versions.some((v) => v.get(f) === bytes))
      throw new Error(`${f} is neither its previous nor its next version (${bytes.length} bytes)`);
  }
  for (const f of mustHave) if (!served.has(f)) throw new Error(`${f} went missing after a crash`);
}

function expectConverged(reference: Map<string, string>): void {
  const got = servedBytes(out);
  expect([...got.keys()]).toEqual([...reference.keys()]);
  for (const [f, bytes] of reference) if (got.get(f) !== bytes) throw new Error(`${f} differs from a fresh build`);
  // No staging folder, temporary manifest or status file, and no lock of a dead process.
  // Besides the manifest, only the record of the last pass (incremental/last-pass.ts) may remain.
  expect(
    readdirSync(join(out, '.profile-snapshot'))
      .filter((f) => f !== 'status.json' && f !== 'last-pass.json' && f !== 'creators-gzip-index')
      .sort(),
  ).toEqual(['manifest']);
}

describe('kill -9 at exact points, repeated', () => {
  it('a build killed at 5 seeded points of the same rebuild, one after another without recovery: always servable; a restart converges', () => {
    makeStore(db, 150);
    expect(cli(buildArgs(db, out)).code).toBe(0);
    const previous = servedBytes(out);
    changeStore(db);
    const next = referenceOf();
    const stillPublished = new Set([...previous.keys()].filter((f) => next.has(f)));

    // Count the changes of the whole rebuild on a throwaway copy of the previous state.
    const countOut = join(dir.path, 'count-out');
    const countFile = join(dir.path, 'count');
    const scratchDb = join(dir.path, 'v1.db');
    makeStore(scratchDb, 150);
    expect(cli(buildArgs(scratchDb, countOut)).code).toBe(0);
    const counted = cli(buildArgs(db, countOut), { FAULT_OUT: countOut, FAULT_COUNT_FILE: countFile });
    expect(counted.code, counted.stderr).toBe(0);
    const total = Number(readFileSync(countFile, 'utf8').split(' ')[0]);
    expect(total).toBeGreaterThan(100);

    const rand = prng(7);
    // One point in each part of the rebuild (staging, commit), plus seeded ones anywhere.
    const points = [2, Math.floor(total * 0.9), ...Array.from({ length: 3 }, () => 1 + Math.floor(rand() * total))];
    for (const n of points) {
      const r = cli(buildArgs(db, out), { FAULT_OUT: out, FAULT_KILL_AFTER: String(n) });
      expect(r.signal, `kill at change ${n}/${total}: ${r.stderr}`).toBe('SIGKILL');
      expectServable([previous, next], stillPublished);
    }
    const restart = cli(buildArgs(db, out));
    expect(restart.code, restart.stderr).toBe(0);
    expectConverged(next);
  });

  it('killed while taking the out dir lock (its first changes): the next build takes over and leaves no lock temp file', () => {
    makeStore(db, 20);
    expect(cli(buildArgs(db, out)).code).toBe(0);
    for (const n of [1, 2, 3]) {
      const r = cli(buildArgs(db, out), { FAULT_OUT: out, FAULT_KILL_AFTER: String(n) });
      expect(r.signal).toBe('SIGKILL');
    }
    expect(
      readdirSync(join(out, '.profile-snapshot')).some((f) => /^lock\..*\.tmp$/.test(f)),
      'the kills left a lock temp file',
    ).toBe(true);
    const restart = cli(buildArgs(db, out));
    expect(restart.code, restart.stderr).toBe(0);
    expectConverged(referenceOf());
  });

  it('a watcher killed at seeded points of its cycles, three times over while the store changes: always servable; a restarted watcher converges', async () => {
    makeStore(db, 150);
    const rand = prng(11);
    const versions: Map<string, string>[] = [];
    let mustHave = new Set<string>();
    for (let round = 1; round <= 3; round++) {
      changeStore(db, round);
      const next = referenceOf();
      versions.push(next);
      // A change of one of its cycles (the first does the work; later ones write status and little else).
      const n = 1 + Math.floor(rand() * 700);
      // Published before and still published by this version: must never go missing.
      const must = new Set([...mustHave].filter((f) => next.has(f)));
      const watcher = startCli(['watch', '--db', db, '--out', out, '--base-url', BASE, '--interval', '0.2'], {
        nodeArgs: ['--import', INJECT],
        env: { SOURCE_DATE_EPOCH: EPOCH, FAULT_OUT: out, FAULT_KILL_AFTER: String(n) },
      });
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        watcher.child.kill('SIGKILL');
      }, 20_000);
      const exit = await watcher.exit;
      clearTimeout(timer);
      const stderr = watcher.stderr();
      expect(exit.signal, `round ${round}, kill at change ${n}: ${stderr}`).toBe('SIGKILL');
      // Killed by the injected fault at change n, not by this test's safety timer.
      expect(timedOut, `round ${round}: the watcher never reached change ${n}`).toBe(false);
      if (existsSync(join(out, 'service-api/v1/creators'))) expectServable(versions, must);
      // What every version published stays published from here on.
      mustHave = new Set([...servedBytes(out).keys()].filter((f) => versions.every((v) => v.has(f))));
    }
    // The restarted watcher takes over the dead one's lock and brings the tree to the store as it is.
    const reference = versions.at(-1)!;
    const watcher = startCli(['watch', '--db', db, '--out', out, '--base-url', BASE, '--interval', '600'], {
      env: { SOURCE_DATE_EPOCH: EPOCH },
    });
    const deadline = Date.now() + 30_000;
    for (;;) {
      const statusFile = join(out, '.profile-snapshot/status.json');
      const status = existsSync(statusFile)
        ? (() => {
            try {
              return JSON.parse(readFileSync(statusFile, 'utf8'));
            } catch {
              return undefined;
            }
          })()
        : undefined;
      if (status?.pid === watcher.pid && status.lastCycle?.ok && status.state === 'idle') break;
      if (Date.now() > deadline) throw new Error(`the restarted watcher never finished a cycle: ${watcher.stderr()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const { code } = await watcher.stop();
    expect(code, watcher.stderr()).toBe(0);
    expectConverged(reference);
  });
});
