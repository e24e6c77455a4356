/**
 * A watcher hands memory it freed back to the system (core/release-freed.ts): where Node has
 * `node:ffi` on glibc (Node 26 on this machine kind), freed buffers malloc keeps leave the resident
 * set once asked, and large buffers leave as they are freed; elsewhere the call says it could not
 * ask, and nothing else happens. In a process of its own, with no experimental warning on its stderr.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../helpers/paths.js';
import { ensureCompiled } from '../watch/helpers.js';

const FIXTURE = join(REPO, 'test/core/fixtures/release-freed.mjs');
const MAP_LARGE_FIXTURE = join(REPO, 'test/core/fixtures/map-large.mjs');
const BUILD = pathToFileURL(join(REPO, 'build')).href;
// node:ffi came in Node 26; asking for it here would print its experimental warning.
const HAS_FFI = process.platform === 'linux' && Number(process.versions.node.split('.')[0]) >= 26;

/** The fixture's figures, in MB: after a collection that does not release, then after `committed`. */
function freeThenCollect(upkeep: 'on' | 'no-release') {
  const run = spawnSync(process.execPath, [FIXTURE, BUILD, upkeep], { encoding: 'utf8', timeout: 60_000 });
  expect(run.status, run.stderr).toBe(0);
  expect(run.stderr).toBe('');
  return JSON.parse(run.stdout) as { canAsk: boolean; collected: number; committed: number };
}

describe('handing freed memory back', () => {
  beforeAll(() => ensureCompiled(), 120_000);

  it(
    HAS_FFI ? 'a watcher returns what malloc kept of 192 MB freed once committed, silently' : 'says it cannot ask, and changes nothing',
    () => {
      const seen = freeThenCollect('on');
      expect(seen.canAsk).toBe(HAS_FFI);
      if (HAS_FFI) {
        // Kept by malloc until asked: a collection within a pass does not ask.
        expect(seen.collected - seen.committed).toBeGreaterThan(150);
      } else {
        expect(Math.abs(seen.collected - seen.committed)).toBeLessThan(20);
      }
    },
    60_000,
  );

  it('with -release-freed the memory stays with malloc', () => {
    const seen = freeThenCollect('no-release');
    expect(seen.collected).toBeGreaterThan(150);
    expect(Math.abs(seen.collected - seen.committed)).toBeLessThan(20);
  }, 60_000);

  /** The fixture's figures, in MB: before 192 MB of 2 MiB buffers, and once they were freed and collected. */
  function freeLargeBuffers(upkeep: 'on' | 'no-map-large', env: NodeJS.ProcessEnv = process.env) {
    const run = spawnSync(process.execPath, [MAP_LARGE_FIXTURE, BUILD, upkeep], { encoding: 'utf8', timeout: 60_000, env });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toBe('');
    const seen = JSON.parse(run.stdout) as { before: number; freed: number };
    return seen.freed - seen.before;
  }

  it(
    HAS_FFI
      ? "a watcher's large buffers leave as they are freed, though malloc's threshold rose past them"
      : 'large buffers freed stay with malloc, as before',
    () => {
      const kept = freeLargeBuffers('on');
      if (HAS_FFI) expect(kept).toBeLessThan(20);
      else expect(kept).toBeGreaterThan(150);
    },
    60_000,
  );

  it('with -map-large, or the host setting its own threshold, they stay with malloc', () => {
    expect(freeLargeBuffers('no-map-large')).toBeGreaterThan(150);
    // 4 MiB: the host's threshold keeps 2 MiB buffers in the arenas, and the tool does not override it.
    expect(freeLargeBuffers('on', { ...process.env, MALLOC_MMAP_THRESHOLD_: String(4 * 2 ** 20) })).toBeGreaterThan(150);
  }, 60_000);
});
