/**
 * The out dir's lock: a build and a watch (or two of either) never write one tree at once; the second
 * waits briefly, then exits 5 naming the holder; a dead holder's lock is taken over, also when its pid
 * now belongs to someone else; of several processes racing for a stale lock exactly one wins.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { build } from '../../src/build.js';
import { SnapshotError } from '../../src/core/errors.js';
import { OutDirLock, processStartTicks } from '../../src/output/lock.js';
import { cycleAfter, ensureCompiled, FIXTURES, lastCycle, makeStore, type Proc, runCliAsync, startCli, startNode } from './helpers.js';
import { eachTestWorkspace } from '../helpers/store.js';

let db: string;
let out: string;
let watcher: Proc | undefined;

beforeAll(() => ensureCompiled(), 120_000);
eachTestWorkspace((w) => ({ db, out } = w), { fill: (file) => makeStore(file, 5), prefix: 'ps-watch-' });
afterEach(async () => {
  await watcher?.stop();
  watcher = undefined;
});

const lockPath = () => join(out, '.profile-snapshot/lock');
function writeLock(holder: Record<string, unknown>) {
  mkdirSync(join(out, '.profile-snapshot'), { recursive: true });
  writeFileSync(
    lockPath(),
    JSON.stringify({ command: 'watch', since: '2026-01-01T00:00:00.000Z', host: 'elsewhere', startTicks: null, token: 'old', ...holder }),
  );
}
/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}
const buildOnce = (lockWaitMs?: number) =>
  build({ db, out, baseUrl: 'https://p.example.com', snapshotMs: Date.UTC(2026, 0, 1), reproducible: true, lockWaitMs });

describe('out dir lock', () => {
  it('a build and a second watch on a watched out dir wait briefly, then exit 5 naming the holder', async () => {
    watcher = startCli(['watch', '--db', db, '--out', out, '--interval', '1']);
    await cycleAfter(out, 0);
    const pid = watcher.child.pid!;
    const startedAt = Date.now();
    const [builder, second] = await Promise.all([
      runCliAsync(['build', '--db', db, '--out', out]),
      runCliAsync(['watch', '--db', db, '--out', out, '--interval', '1']),
    ]);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(4_000); // they waited (5 s) before giving up
    for (const run of [builder, second]) {
      expect(run.code).toBe(5);
      expect(run.stderr).toMatch(
        new RegExp(
          `^profile-snapshot: out dir .*dist is locked by pid ${pid} \\(profile-snapshot watch, since .*\\)\\. Fix: .*regenerate --out`,
          'm',
        ),
      );
    }
    expect(watcher.child.exitCode).toBeNull();
    expect(JSON.parse(readFileSync(lockPath(), 'utf8')).pid).toBe(pid);
  });

  it('a build waits for a holder that lets go within the wait, then builds', async () => {
    const holder = startNode([join(FIXTURES, 'hold-lock.mjs'), out, '1500']);
    await waitForOutput(holder, 'took');
    const result = await runCliAsync(['build', '--db', db, '--out', out]);
    expect(result.code, result.stderr).toBe(0);
    expect(existsSync(lockPath())).toBe(false);
  });

  it('build() in the library takes the lock too (exit 5 after lockWaitMs) and releases it after', () => {
    const held = OutDirLock.acquire(out, { command: 'watch' });
    try {
      let error: unknown;
      try {
        buildOnce(200);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(SnapshotError);
      expect((error as SnapshotError).exitCode).toBe(5);
      expect((error as Error).message).toContain(`locked by pid ${process.pid} (profile-snapshot watch`);
    } finally {
      held.release();
    }
    expect(buildOnce().profiles).toBe(5);
    expect(existsSync(lockPath())).toBe(false);
  });

  it('takes over the lock of a dead process (kill -9, crash)', async () => {
    writeLock({ pid: deadPid() });
    const result = await runCliAsync(['build', '--db', db, '--out', out]);
    expect(result.code, result.stderr).toBe(0);
    // A watcher started over a stale lock takes it over.
    writeLock({ pid: deadPid() });
    watcher = startCli(['watch', '--db', db, '--out', out, '--interval', '1']);
    await cycleAfter(out, 0);
    expect(JSON.parse(readFileSync(lockPath(), 'utf8')).pid).toBe(watcher.child.pid);
    // The lock clobbered while it runs (a dead pid in it now): the next cycle takes it back.
    writeLock({ pid: deadPid() });
    await cycleAfter(out, lastCycle(out) + 1);
    expect(JSON.parse(readFileSync(lockPath(), 'utf8')).pid).toBe(watcher.child.pid);
  });

  it('takes over a lock whose pid now belongs to another process (pid reuse), or names our own pid with another token', () => {
    // pid 1 is alive, but it did not start when this lock says its holder did.
    writeLock({ pid: 1, startTicks: String(Number(processStartTicks(1) ?? '5') + 12345) });
    expect(buildOnce(0).profiles).toBe(5);
    // A restarted container often gets its predecessor's pid: our own pid, but not a lock we hold.
    writeLock({ pid: process.pid, token: 'predecessor' });
    expect(buildOnce(0).profiles).toBe(5);
    // An unreadable lock file is not anyone's.
    mkdirSync(join(out, '.profile-snapshot'), { recursive: true });
    writeFileSync(lockPath(), 'garbage');
    expect(buildOnce(0).profiles).toBe(5);
  });

  it('does not take over a live holder, even one whose host name differs', () => {
    const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      writeLock({ pid: sleeper.pid, startTicks: processStartTicks(sleeper.pid!) });
      expect(() => buildOnce(100)).toThrow(new RegExp(`locked by pid ${sleeper.pid} on host elsewhere`));
    } finally {
      sleeper.kill('SIGKILL');
    }
  });

  it('of several processes racing for one stale lock, exactly one takes it', async () => {
    // Six racers, five rounds: the takeover race this guards against (a racer removing the lock a
    // faster one had just taken) showed in about one round in four before the takeover lock.
    for (let round = 0; round < 5; round++) {
      writeLock({ pid: deadPid() });
      const goAt = String(Date.now() + 1500);
      const racers = Array.from({ length: 6 }, () => startNode([join(FIXTURES, 'hold-lock.mjs'), out, '1000', goAt]));
      await Promise.all(racers.map((r) => r.exit));
      const outcomes = racers.map((r) => r.stdout()).sort();
      expect(outcomes).toEqual(['refused', 'refused', 'refused', 'refused', 'refused', 'took']);
      expect(existsSync(lockPath())).toBe(false);
    }
  });
});

async function waitForOutput(proc: Proc, text: string) {
  const { waitFor } = await import('./helpers.js');
  await waitFor(`"${text}"`, () => proc.stdout().includes(text));
}
