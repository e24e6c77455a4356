/**
 * Disk full during a cycle, for real: the out dir lives on a small tmpfs. The cycle fails with one
 * clear line, the published tree keeps its last good bytes, the watcher carries on, and once space is
 * freed the next cycle publishes. Needs permission to mount a tmpfs (root); skipped otherwise.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  cycleAfter,
  ensureCompiled,
  makeStore,
  type Proc,
  profilePath,
  publishedFiles,
  readJson,
  sql,
  startCli,
  status,
  tempDir,
  userName,
  waitFor,
} from './helpers.js';

function tryMount(dir: string): boolean {
  mkdirSync(dir, { recursive: true });
  return spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'ignore' }).status === 0;
}
const probe = tempDir();
const canMount = tryMount(join(probe.path, 'fs'));
if (canMount) spawnSync('umount', [join(probe.path, 'fs')]);
probe.cleanup();

let dir: ReturnType<typeof tempDir> | undefined;
let mounted: string | undefined;
let watcher: Proc | undefined;

beforeAll(() => ensureCompiled(), 120_000);
afterEach(async () => {
  await watcher?.stop();
  if (mounted) spawnSync('umount', [mounted]);
  dir?.cleanup();
});

/** Fills the filesystem of `path` up to the last byte. */
function fill(path: string): void {
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(4096, 120);
  try {
    for (;;) writeSync(fd, chunk);
  } catch {
    // ENOSPC: full
  } finally {
    closeSync(fd);
  }
}

describe.skipIf(!canMount)('disk full', () => {
  it('a cycle that runs out of space keeps the last good output; the watcher recovers once space is freed', async () => {
    dir = tempDir();
    const db = join(dir.path, 'profiles.db');
    mounted = join(dir.path, 'fs');
    expect(tryMount(mounted)).toBe(true);
    const out = join(mounted, 'dist');
    makeStore(db, 40);
    watcher = startCli(['watch', '--db', db, '--out', out, '--interval', '1']);
    await cycleAfter(out, 0);
    const tree = new Map(publishedFiles(out).map((f) => [f, readFileSync(join(out, f), 'utf8')]));

    const filler = join(mounted, 'filler');
    fill(filler);
    sql(db, `UPDATE users SET bio = ? WHERE id <= 30`, 'A much longer biography. '.repeat(200));
    await waitFor('a cycle to fail for lack of space', () => /cycle \d+ FAILED: .*ENOSPC/.test(watcher!.stderr()), 15_000);
    expect(new Map(publishedFiles(out).map((f) => [f, readFileSync(join(out, f), 'utf8')]))).toEqual(tree);
    expect(watcher.child.exitCode).toBeNull();

    const failed = Number(/cycle (\d+) FAILED/.exec(watcher.stderr())![1]);
    rmSync(filler);
    // (While the disk was full the status file may not have been writable either: a monitor sees its
    // updatedAt stop moving. Wait for a success after the failed cycle.)
    await waitFor(
      'a successful cycle after space was freed',
      () => {
        const s = status(out);
        return s?.lastCycle?.ok && s.lastCycle.number > failed && s.consecutiveFailures === 0;
      },
      15_000,
    );
    // Every changed profile, not only the first: a cycle that failed must not have let the watcher
    // believe the others were published (it reads only changed users afterwards).
    for (let id = 1; id <= 40; id++) {
      expect(readJson(profilePath(out, userName(id))).data.bio, userName(id)).toMatch(
        id <= 30 ? /^A much longer biography/ : /^Bio of user/,
      );
    }
    expect(publishedFiles(out).filter((f) => f.includes('staging'))).toEqual([]);
  });
});
