/**
 * Helpers for the watch tests: real SQLite stores in temp folders (WAL mode, as the platform runs
 * them), the real bin in child processes, and bounded polling instead of sleeps-and-hope.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CycleStatus, WatchStatus } from '../../src/watch/status.js';
import { runningProcesses, type Proc } from '../helpers/process.js';
import { REPO } from '../helpers/paths.js';
import { TestStore, tempDir as sharedTempDir, userName } from '../helpers/store.js';

export { BIN, REPO } from '../helpers/paths.js';
export { runCliAsync, startCli, startNode, type Proc } from '../helpers/process.js';
export { listFiles, publishedFiles } from '../helpers/output.js';
export { execSql as sql, userName } from '../helpers/store.js';
export const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

/** The CLI runs compiled code: recompile when any source is newer than its output (serialised). */
export function ensureCompiled(): void {
  if (!stale()) return;
  const lock = join(tmpdir(), 'profile-snapshot-watch-tests-tsc.lock');
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`${lock} held too long`);
      spawnSync('sleep', ['0.2']);
    }
  }
  try {
    if (stale()) spawnSync('npm', ['run', 'compile'], { cwd: REPO, stdio: 'ignore' });
  } finally {
    rmdirSync(lock);
  }
  if (stale()) throw new Error('build/ is older than src/ and npm run compile did not refresh it: run it');
}

function stale(): boolean {
  const walk = (dir: string): boolean =>
    readdirSync(dir, { withFileTypes: true }).some((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return walk(path);
      // TypeScript compiles to .js; plain .js modules are copied as they are; .d.ts files are not compiled.
      if (entry.name.endsWith('.d.ts') || !/\.[jt]s$/.test(entry.name)) return false;
      const built = join(REPO, 'build', relative(join(REPO, 'src'), path)).replace(/\.ts$/, '.js');
      return !existsSync(built) || statSync(built).mtimeMs < statSync(path).mtimeMs;
    });
  return walk(join(REPO, 'src'));
}

/** A temp folder for one test (the shared helper, named for this suite). */
export const tempDir = () => sharedTempDir('ps-watch-');

/** A contract-schema store in WAL mode with `users` active users named user00001..., some with extras. */
export function makeStore(file: string, users: number): void {
  mkdirSync(dirname(file), { recursive: true });
  const store = new TestStore(file);
  store.db.pragma('journal_mode = WAL');
  store.decoration('halo', 'Halo', 'halo.png');
  store.users(users, (id) => ({
    user: {
      username: userName(id),
      display_name: `User ${id}`,
      bio: `Bio of user ${id}, with some text to make it realistic. `.repeat(2),
      created_at: '2024-01-01 00:00:00',
      views: id * 7,
      decoration_id: id % 5 === 0 ? 'halo' : null,
      email: 'x@mail.invalid',
      password_hash: 'HASH',
      last_login_ip: '10.0.0.1',
    },
    badges: [...(id % 3 === 0 ? ['verified'] : []), ...(id % 11 === 0 ? ['official'] : [])],
    socials: [
      ['GitHub', `https://github.com/${userName(id)}`, 1],
      ...(id % 2 === 0 ? ([['Discord', `https://discord.gg/${id}`, 2]] as [string, string, number][]) : []),
    ],
  }));
  store.close();
}

/** Polls `condition` every 25 ms until it returns a truthy value; fails with `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, condition: () => T | undefined | false | null, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = condition();
    if (value) return value;
    if (Date.now() > deadline) {
      // Cycles that changed nothing say nothing about why: left out, so the log reaches further back.
      const telling = (stderr: string) =>
        stderr
          .split('\n')
          .filter((line) => !/: cycle \d+: no change;/.test(line))
          .join('\n');
      const logs = runningProcesses()
        .map(
          (p) =>
            `--- pid ${p.child.pid} (exit ${p.child.exitCode ?? p.child.signalCode ?? 'none'}) stderr:\n${telling(p.stderr()).slice(-3000)}`,
        )
        .join('\n');
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${logs ? `\n${logs}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

export function status(out: string): WatchStatus | undefined {
  try {
    return JSON.parse(readFileSync(join(out, '.profile-snapshot/status.json'), 'utf8')) as WatchStatus;
  } catch {
    return undefined;
  }
}

/** Waits until the watcher has finished a cycle numbered above `after` and returns the status then. */
export function cycleAfter(out: string, after: number, timeoutMs = 15_000): Promise<WatchStatus> {
  return waitFor(
    `a cycle after #${after} in ${out}`,
    () => {
      const s = status(out);
      return s && s.state !== 'running' && s.lastCycle !== null && s.lastCycle.number > after ? s : undefined;
    },
    timeoutMs,
  );
}

export const lastCycle = (out: string) => status(out)?.lastCycle?.number ?? 0;

/** A watcher's cycles as `--json` prints them on stdout, one line each. */
export const cyclesOf = (proc: Proc): CycleStatus[] =>
  proc
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as CycleStatus);

export function readJson(path: string): any {
  return JSON.parse(readFileSync(path, 'utf8'));
}

export const profilePath = (out: string, name: string) => join(out, 'api/v1/users', name);
