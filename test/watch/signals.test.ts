/**
 * Operators' controls, with real signals to the real bin: SIGHUP and `regenerate` rebuild at once
 * (regenerate waits for a cycle that started after its request and prints it), SIGINT/SIGTERM finish
 * the current cycle and exit 0, a second signal stops at once, and regenerate never signals anything
 * but a watcher.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  cycleAfter,
  ensureCompiled,
  lastCycle,
  makeStore,
  type Proc,
  profilePath,
  readJson,
  runCliAsync,
  sql,
  startCli,
  status,
  waitFor,
} from './helpers.js';
import { eachTestWorkspace, type Workspace } from '../helpers/store.js';

let dir: Workspace['dir'];
let db: string;
let out: string;
let watcher: Proc | undefined;

beforeAll(() => ensureCompiled(), 120_000);
eachTestWorkspace((w) => ({ dir, db, out } = w), { prefix: 'ps-watch-' });
afterEach(async () => {
  await watcher?.stop();
  watcher = undefined;
});

// A fixed snapshot time: accountAgeDays would otherwise change every profile at midnight UTC.
const watch = (...args: string[]) => startCli(['watch', '--db', db, '--out', out, ...args], { env: { SOURCE_DATE_EPOCH: '1767225600' } });
const views = (name: string) => readJson(profilePath(out, name)).data.views as number;
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('signals and regenerate', () => {
  it('SIGHUP runs a cycle at once, long before the next tick', async () => {
    makeStore(db, 30);
    watcher = watch('--interval', '600');
    await cycleAfter(out, 0);
    sql(db, 'UPDATE users SET views = 4242 WHERE id = 1');
    watcher.child.kill('SIGHUP');
    const s = await cycleAfter(out, 1, 10_000);
    expect(s.lastCycle?.files?.written).toBe(4);
    expect(views('user00001')).toBe(4242);
    expect(watcher.child.exitCode).toBeNull();
  });

  it('regenerate signals the watcher through its lock, waits for that cycle and prints its summary', async () => {
    makeStore(db, 30);
    watcher = watch('--interval', '600');
    await cycleAfter(out, 0);
    sql(db, 'UPDATE users SET views = 777 WHERE id = 2');
    const result = await runCliAsync(['regenerate', '--out', out]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(
      `profile-snapshot: watcher pid ${watcher.child.pid}: cycle 2: 30 profiles published (30 creators), 0 skipped; files 4 written, 63 unchanged, 0 removed; 0 warnings; ${/\d+\.\d\d s/.exec(result.stderr)?.[0]}\n`,
    );
    // When regenerate returns, the change is published.
    expect(views('user00002')).toBe(777);

    const json = await runCliAsync(['regenerate', '--out', out, '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ number: 3, ok: true, changed: false });
  });

  it('regenerate never answers with a cycle that was already running when it asked', async () => {
    // A store big enough that a cycle takes a while; cycles only on request.
    makeStore(db, 5000);
    watcher = watch('--interval', '600');
    await cycleAfter(out, 0, 30_000);
    // Every user changed, so cycle 2 renders them all and takes a while (a cycle reads only the
    // users that changed, so on a quiet store it would be over in milliseconds, too soon to watch).
    sql(db, 'UPDATE users SET views = views + 1');
    // Start cycle 2 and let it get into its read of the store...
    watcher.child.kill('SIGHUP');
    await waitFor('cycle 2 to start', () => status(out)?.state === 'running', 10_000);
    await new Promise((r) => setTimeout(r, 300));
    // ...then change the store and ask: cycle 2 (already under way) is not the answer, cycle 3 is.
    sql(db, 'UPDATE users SET views = 123456 WHERE id = 3');
    const result = await runCliAsync(['regenerate', '--out', out, '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).number).toBeGreaterThanOrEqual(3);
    expect(views('user00003')).toBe(123456);
  });

  it('regenerate exits 5 when no watcher runs, and never sends SIGHUP to a build', async () => {
    makeStore(db, 3);
    const none = await runCliAsync(['regenerate', '--out', out]);
    expect(none.code).toBe(5);
    expect(none.stderr).toMatch(/^profile-snapshot: no watcher is running for .*dist\. Fix: start one with "profile-snapshot watch --out/);

    // A live process holding the lock as a build: SIGHUP would kill it.
    const holder = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      const lockDir = join(out, '.profile-snapshot');
      mkdirSync(lockDir, { recursive: true });
      writeFileSync(
        join(lockDir, 'lock'),
        JSON.stringify({ pid: holder.pid, command: 'build', since: new Date().toISOString(), host: 'x', startTicks: null, token: 't' }),
      );
      const built = await runCliAsync(['regenerate', '--out', out]);
      expect(built.code).toBe(5);
      expect(built.stderr).toMatch(new RegExp(`is locked by pid ${holder.pid} .*profile-snapshot build.*not by a watcher`));
      expect(alive(holder.pid!)).toBe(true);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it("regenerate exits with the failed cycle's own code (store missing: 3)", async () => {
    makeStore(db, 3);
    watcher = watch('--interval', '600');
    await cycleAfter(out, 0);
    renameSync(db, `${db}.away`);
    const result = await runCliAsync(['regenerate', '--out', out]);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(
      new RegExp(`^profile-snapshot: watcher pid ${watcher.child.pid}: cycle 2 failed \\(1 in a row\\): profile store not found`),
    );
    expect(watcher.child.exitCode).toBeNull();
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} during a cycle finishes that cycle, releases the lock and exits 0`, async () => {
      makeStore(db, 5000);
      watcher = watch('--interval', '600');
      // Signal as soon as the first cycle (a full build of 10k files) is under way.
      await waitFor('the first cycle to start', () => status(out)?.state === 'running', 20_000);
      watcher.child.kill(signal);
      const { code } = await watcher.exit;
      expect(code, watcher.stderr()).toBe(0);
      const s = status(out)!;
      expect(s.state).toBe('stopped');
      expect(s.lastCycle).toMatchObject({ number: 1, ok: true, profiles: 5000 });
      expect(existsSync(profilePath(out, 'user05000'))).toBe(true);
      expect(readdirSync(join(out, '.profile-snapshot')).sort()).toEqual([
        'creators-gzip-index',
        'last-pass.json',
        'manifest',
        'status.json',
      ]);
      expect(watcher.stderr()).toMatch(/cycle 1: 5,000 profiles[\s\S]*stopping after the current cycle[\s\S]*stopped\n$/);
    });
  }

  it('waits for a running --exec on SIGTERM; a second signal ends it and exits at once', async () => {
    makeStore(db, 3);
    const pidFile = join(dir.path, 'exec.pid');
    watcher = watch('--interval', '600', '--exec', `echo $$ > "${pidFile}"; exec sleep 60`);
    const execPid = Number(await waitFor('the exec command to start', () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8'))));
    watcher.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 700));
    expect(watcher.child.exitCode).toBeNull(); // still waiting for the deploy to finish
    expect(alive(execPid)).toBe(true);
    watcher.child.kill('SIGTERM');
    const { code } = await watcher.exit;
    expect(code).toBe(0);
    await waitFor('the exec command to end', () => !alive(execPid), 5_000);
    expect(watcher.stderr()).toMatch(/second signal: stopping now/);
    expect(existsSync(join(out, '.profile-snapshot/lock'))).toBe(false);
  });

  it('a cycle longer than the interval delays the next one; cycles never overlap', async () => {
    makeStore(db, 2000);
    watcher = watch('--interval', '0.1', '--json');
    await waitFor('four cycles', () => lastCycle(out) >= 4 && status(out)?.state !== 'running', 60_000);
    const cycles = watcher
      .stdout()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    // The first cycle (a cold build of 2000 profiles) outlasts the 100 ms interval.
    expect(cycles[0].durationMs).toBeGreaterThan(100);
    for (let i = 1; i < cycles.length; i++) {
      // Each cycle starts after the previous one finished, on the shared monotonic clock, and no
      // earlier than an interval after the previous start: missed ticks never pile up back to back.
      const gapMs = Number(BigInt(cycles[i].startedMonoNs) - BigInt(cycles[i - 1].startedMonoNs)) / 1e6;
      expect(gapMs).toBeGreaterThan(Math.max(100, cycles[i - 1].durationMs) - 5);
      expect(cycles[i].number).toBe(cycles[i - 1].number + 1);
    }
  });
});
