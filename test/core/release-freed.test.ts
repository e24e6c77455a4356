/**
 * A watcher hands memory it freed back to the system (core/release-freed.ts): where Node has
 * `node:ffi` on glibc (Node 26 on this machine kind), freed buffers malloc keeps leave the resident
 * set once asked; elsewhere the call says it could not ask, and nothing else happens. In a process of
 * its own, with no experimental warning on its stderr.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../helpers/paths.js';
import { ensureCompiled } from '../watch/helpers.js';

const FIXTURE = join(REPO, 'test/core/fixtures/release-freed.mjs');
const MODULE = pathToFileURL(join(REPO, 'build/core/release-freed.js')).href;
// node:ffi came in Node 26; asking for it here would print its experimental warning.
const HAS_FFI = process.platform === 'linux' && Number(process.versions.node.split('.')[0]) >= 26;

describe('handing freed memory back', () => {
  beforeAll(() => ensureCompiled(), 120_000);

  it(
    HAS_FFI ? 'returns what malloc kept of 192 MB freed, silently' : 'says it cannot ask, and changes nothing',
    () => {
      const run = spawnSync(process.execPath, ['--expose-gc', FIXTURE, MODULE], { encoding: 'utf8', timeout: 60_000 });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stderr).toBe('');
      const seen = JSON.parse(run.stdout) as { released: boolean; before: number; after: number };
      expect(seen.released).toBe(HAS_FFI);
      if (HAS_FFI) {
        // Kept by malloc until asked: without the call the two would be equal.
        expect(seen.before - seen.after).toBeGreaterThan(150);
      } else {
        expect(Math.abs(seen.before - seen.after)).toBeLessThan(20);
      }
    },
    60_000,
  );
});
