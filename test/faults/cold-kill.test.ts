/**
 * A first build (no users folders yet) stages whole folders and renames them into place. kill -9 at
 * any point of it, the commit's folder renames included, leaves nothing half-published, and the next
 * build converges to exactly a clean build.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listFiles } from '../helpers/output.js';
import { buildArgs, cli, makeStore, servedBytes, tempDir } from './helpers.js';

let dir: ReturnType<typeof tempDir>;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => dir.cleanup());

describe('kill -9 during a first build', () => {
  it('at every tenth change and each of the last ones: nothing half-published, the next build converges', () => {
    const db = join(dir.path, 'profiles.db');
    makeStore(db, 40);
    const reference = join(dir.path, 'reference');
    const counted = join(dir.path, 'count');
    expect(cli(buildArgs(db, reference), { FAULT_OUT: reference, FAULT_COUNT_FILE: counted }).code).toBe(0);
    const changes = Number(readFileSync(counted, 'utf8').split(/\s+/)[0]);
    expect(changes).toBeGreaterThan(40);
    const expected = servedBytes(reference);

    const points = new Set<number>();
    for (let k = 1; k < changes; k += 10) points.add(k);
    for (let k = Math.max(1, changes - 8); k <= changes; k++) points.add(k);
    for (const k of points) {
      const out = join(dir.path, `out-${k}`);
      const killed = cli(buildArgs(db, out), { FAULT_OUT: out, FAULT_KILL_AFTER: String(k) });
      expect(killed.signal, `change ${k} of ${changes}`).toBe('SIGKILL');
      // Whatever was published is whole: every served file equals the reference's bytes.
      if (existsSync(out)) {
        for (const [path, bytes] of servedBytes(out)) expect(bytes, `${path} after a kill at change ${k}`).toBe(expected.get(path));
      }
      const again = cli(buildArgs(db, out));
      expect(again.code, again.stderr).toBe(0);
      expect(servedBytes(out)).toEqual(expected);
      expect(listFiles(out).filter((f) => f.startsWith('.profile-snapshot/staging') || f.endsWith('.tmp'))).toEqual([]);
    }
  }, 120_000);
});
