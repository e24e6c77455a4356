/**
 * A watcher on a tracked store (`store track`) keeps a lean copy of it, and follows the clock. When
 * the clock can no longer be followed (removed, broken, installed again with another epoch), a cycle
 * reads every row once and says why, in its line and in status.json, and the tree is exactly what a
 * fresh build makes of the store; after that the watcher follows the clock again.
 */
import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CycleStatus } from '../../src/watch/status.js';
import {
  cyclesOf,
  ensureCompiled,
  makeStore,
  publishedFiles,
  runCliAsync,
  sql,
  startCli,
  tempDir,
  userName,
  waitFor,
  type Proc,
} from './helpers.js';

const EPOCH = '1767225600';
const env = { SOURCE_DATE_EPOCH: EPOCH };

describe('a watcher on a tracked store whose clock cannot be followed', () => {
  const dir = tempDir();
  const db = join(dir.path, 'store.db');
  const out = join(dir.path, 'out');
  beforeAll(() => ensureCompiled(), 120_000);
  afterAll(() => dir.cleanup());

  const cli = async (args: string[]) => {
    const result = await runCliAsync(args, { env });
    expect(result.code, result.stderr).toBe(0);
    return result;
  };
  /** The tree equals a fresh build of the store as it is now, byte for byte. */
  async function expectFresh(label: string): Promise<void> {
    const fresh = join(dir.path, `fresh-${label}`);
    await cli(['build', '--db', db, '--out', fresh]);
    const files = publishedFiles(out);
    expect(files, label).toEqual(publishedFiles(fresh));
    for (const file of files) expect(readFileSync(join(out, file)).equals(readFileSync(join(fresh, file))), `${label}: ${file}`).toBe(true);
  }
  /** Writes `statement`, and returns the first cycle after it that changed the tree (the watcher prints each with --json). */
  async function cycleOf(watcher: Proc, statement: string, name: number, text: string): Promise<CycleStatus> {
    const before = cyclesOf(watcher).length;
    sql(db, statement);
    const cycle = await waitFor(
      `the cycle that publishes ${text}`,
      () =>
        cyclesOf(watcher)
          .slice(before)
          .find((c) => c.changed),
      30_000,
    );
    expect(readFileSync(join(out, 'api/v1/users', userName(name)), 'utf8')).toContain(text);
    return cycle;
  }

  it('reads every row once after the clock is removed, broken or installed again, says why, and publishes what a fresh build does', async () => {
    makeStore(db, 120);
    await cli(['store', 'track', '--db', db]);
    const watcher = startCli(['watch', '--db', db, '--out', out, '--interval', '0.2', '--json'], { env });
    try {
      await waitFor('the first cycle', () => cyclesOf(watcher).length > 0, 30_000);
      const followed = await cycleOf(watcher, `UPDATE users SET bio = 'one' WHERE id = 3`, 3, '"one"');
      expect(followed.changes).toEqual({ by: 'clock', clockFallback: null });
      expect(followed.rowsRead).toBe(1);

      const steps: [string, () => Promise<unknown>, RegExp][] = [
        ['removed', () => cli(['store', 'untrack', '--db', db]), /the change clock was removed/],
        ['installed', () => cli(['store', 'track', '--db', db]), /the change clock is new to this reader/],
        ['broken', async () => dropOneTrigger(db), /the change clock cannot be read: it has \d+ of its \d+ triggers/],
        ['repaired', () => cli(['store', 'track', '--db', db]), /the change clock is new to this reader/],
      ];
      let round = 0;
      let earlier: RegExp | undefined;
      for (const [label, act, why] of steps) {
        round++;
        const before = cyclesOf(watcher).length;
        const logged = watcher.stderr().length;
        await act();
        await cycleOf(watcher, `UPDATE users SET bio = 'after ${label}' WHERE id = ${round + 3}`, round + 3, `after ${label}`);
        // The cycle that meets the clock as it is now says why, whether or not the change is in it yet.
        const fellBack = cyclesOf(watcher)
          .slice(before)
          .filter((c) => c.changes?.clockFallback);
        // Cycles before the act took effect may still say the last step's reason (a broken clock says it every cycle).
        const said = fellBack.filter((c) => why.test(c.changes!.clockFallback!));
        expect(said.length, label).toBeGreaterThan(0);
        for (const cycle of fellBack) if (!said.includes(cycle)) expect(cycle.changes?.clockFallback, label).toMatch(earlier ?? why);
        expect(said[0]!.changes?.by, label).toMatch(/^(every row|comparison)$/);
        earlier = why;
        // Said again in the log since this step, not only in an earlier step's lines.
        expect(watcher.stderr().slice(logged), label).toMatch(why);
        await expectFresh(label);
        // Then the clock is followed again wherever there is one to follow.
        if (label === 'removed' || label === 'broken') continue;
        const next = await cycleOf(watcher, `UPDATE users SET bio = 'followed after ${label}' WHERE id = 2`, 2, `followed after ${label}`);
        expect(next.changes, label).toEqual({ by: 'clock', clockFallback: null });
        await expectFresh(`${label}-followed`);
      }
    } finally {
      await watcher.stop();
    }
  }, 180_000);
});

/** A clock missing one of its triggers, as a careless migration could leave it. */
function dropOneTrigger(file: string): void {
  const store = new Database(file);
  try {
    const name = store.prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger' ORDER BY name LIMIT 1").pluck().get() as string;
    store.exec(`DROP TRIGGER "${name}"`);
  } finally {
    store.close();
  }
}
