/**
 * A quiet watch cycle finds the users whose account age turns over from an index on the copy's age
 * phases (StoreShadow.agesTurning), not by walking the copy. It must find exactly the users, and the
 * same next turn, that the walk comparing the store with its copy finds (StoreShadow.changes) on an
 * unchanged store, for any window: one that wraps past midnight, an empty one, one of nearly a day.
 */
import { describe, expect, it } from 'vitest';
import { prng } from '../../src/seed/synthetic.js';
import { ProfileStore } from '../../src/store/read.js';
import { eachTestWorkspace, TestStore, type Workspace } from '../helpers/store.js';

const DAY = 86_400_000;
const USERS = 400;

let db: Workspace['db'];
eachTestWorkspace((w) => ({ db } = w));

/** created_at values across days and times of day, with milliseconds, before 1970, and unparsable ones. */
function createdAt(id: number, next: () => number): { text: string; ms?: number } {
  if (id % 37 === 0) return { text: 'not a date' };
  if (id % 41 === 0) return { text: '2021-02-30 25:00:00' };
  const ms = Math.floor((next() - 0.1) * 40 * 365 * DAY);
  return { text: new Date(ms).toISOString().replace('T', ' ').replace('Z', ''), ms };
}

/** Fills the store; returns the created_at of each user that has a parsable one, in ms. */
function fill(next: () => number): number[] {
  const store = new TestStore(db);
  const created: number[] = [];
  store.users(USERS, (id) => {
    const { text, ms } = createdAt(id, next);
    if (ms !== undefined) created.push(ms);
    return { user: { username: `user${id}`, created_at: text } };
  });
  store.db.close();
  return created;
}

/**
 * Windows (since, at] of every kind: fixed widths (none, a millisecond, nearly a day), random ones,
 * and ones whose edge lies a millisecond either side of a user's turn (the one second of slack on
 * each side included, see AGE_MARGIN_MS in src/store/shadow.ts).
 */
function windows(next: () => number, created: number[]): [number, number][] {
  const start = Date.UTC(2026, 10, 25);
  const inDays = (ms: number) => start + ((((ms - start) % DAY) + DAY) % DAY) + Math.floor(next() * 3) * DAY;
  const found: [number, number][] = [];
  for (const width of [0, 1, 999, 60_000, 3_600_000, 6 * 3_600_000, DAY - 3_000]) found.push([start + 5_000, start + 5_000 + width]);
  for (let i = 0; i < 100; i++) {
    const since = start + Math.floor(next() * 3 * DAY);
    found.push([since, since + Math.floor(next() * next() * DAY)]);
  }
  for (let i = 0; i < 40; i++) {
    const turn = created[Math.floor(next() * created.length)]!;
    const width = Math.floor(next() * 3_600_000);
    for (const after of [999, 1_000]) {
      const since = inDays(turn + after);
      found.push([since, since + width]);
    }
    for (const before of [-1_000, -1_001, 0]) {
      const at = inDays(turn + before);
      found.push([at - width, at]);
    }
  }
  return found;
}

describe("the watcher's copy finds turning ages by index", () => {
  it('finds the users and the next turn the full comparison finds, for windows of every kind', () => {
    const next = prng(30);
    const all = windows(next, fill(next));
    const store = ProfileStore.open(db);
    try {
      store.inSnapshot(() => expect(store.shadow.capture()).toBe(true));
      let turned = 0;
      for (const [since, at] of all) {
        const [byIndex, byWalk] = store.inSnapshot(() => [store.shadow.agesTurning(since, at), store.shadow.changes(since, at)]);
        expect(byIndex, `window ${since}..${at}`).toBeDefined();
        expect(
          [...byIndex!.users].sort((a, b) => a - b),
          `window ${since}..${at}`,
        ).toEqual([...byWalk!.users].sort((a, b) => a - b));
        expect(byIndex!.stableUntilMs, `window ${since}..${at}`).toBe(byWalk!.stableUntilMs);
        turned += byIndex!.users.size;
      }
      // Not only the users with no parsable created_at: windows found ages turning too.
      expect(turned).toBeGreaterThan(all.length * 20);
    } finally {
      store.close();
    }
  });
});
