/**
 * What a watch cycle costs: a full first build, an idle cycle (nothing changed: one pass over the
 * store, no file written) and a cycle after 1% of the profiles changed (only their files, the creators
 * list and its gzip variant written), on the sample store and on a synthetic store of 10,000 users. The counts are
 * asserted; the times are printed (a 2-core shared machine is no place for timing assertions).
 */
import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { build, type BuildReport } from '../../src/build.js';
import { makeStore, REPO, tempDir } from './helpers.js';

const dir = tempDir();
afterAll(() => dir.cleanup());

function sampleStore(file: string): void {
  const db = new Database(file);
  db.pragma('foreign_keys = OFF'); // the sample deliberately holds a dangling reference
  db.pragma('journal_mode = WAL');
  for (const f of ['data/schema.sql', 'data/sample.sql']) db.exec(readFileSync(join(REPO, f), 'utf8'));
  db.close();
}

function cycle(db: string, out: string): BuildReport {
  return build({ db, out, baseUrl: 'https://p.example.com', snapshotMs: Date.now() });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function measure(label: string, db: string) {
  const out = join(dir.path, `${label}-dist`);
  const first = cycle(db, out);
  const idle = [1, 2, 3, 4, 5].map(() => cycle(db, out));
  for (const r of idle) expect(r.files).toMatchObject({ written: 0, removed: 0 });

  // Change 1% of the published profiles (at least one): a view count each, as the platform does.
  const sqlite = new Database(db);
  const ids = sqlite.prepare(`SELECT id FROM users WHERE status = 'active' ORDER BY id`).pluck().all() as number[];
  const changed = ids.filter((_, i) => i % 100 === 0);
  const changedTimes: number[] = [];
  for (let round = 0; round < 3; round++) {
    const bump = sqlite.prepare('UPDATE users SET views = views + 1 WHERE id = ?');
    sqlite.transaction(() => changed.forEach((id) => bump.run(id)))();
    const r = cycle(db, out);
    // Only the changed profiles (two alias files each), the creators list and its gzip variant are rewritten.
    expect(r.files).toMatchObject({ written: changed.length * 2 + 2, removed: 0 });
    changedTimes.push(r.seconds);
  }
  sqlite.close();
  const ms = (s: number) => `${(s * 1000).toFixed(0)} ms`;
  console.log(
    `${label}: ${first.profiles} profiles, ${first.files.written} files; first build ${ms(first.seconds)}; ` +
      `idle cycle ${ms(median(idle.map((r) => r.seconds)))} (median of 5); ` +
      `1% changed (${changed.length} profiles) ${ms(median(changedTimes))} (median of 3)`,
  );
}

describe('cycle cost', () => {
  it('sample store: idle cycles write nothing; a changed profile rewrites exactly its files and the list', () => {
    const db = join(dir.path, 'sample.db');
    sampleStore(db);
    measure('sample store', db);
  });

  it('10,000 users: idle cycles write nothing; 1% changed rewrites exactly 202 files', () => {
    const db = join(dir.path, 'synthetic.db');
    makeStore(db, 10_000);
    measure('synthetic store', db);
  }, 120_000);
});
