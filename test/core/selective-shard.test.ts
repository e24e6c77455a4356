/**
 * A shard's watcher keeps a copy of its shard alone (store/shadow.ts, slicedChanges) and finds what
 * changed by id, never walking the whole store. Whatever it publishes must be what a fresh build of
 * the same shard publishes, whichever table changed and whether the users entered the shard, left it
 * or stayed out of it; and once a pass has read a change, the next one reads nothing.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BuildOptions, BuildReport } from '../../src/build.js';
import { sliceOf } from '../../src/core/slice.js';
import { StoreSession } from '../../src/incremental/session.js';
import { buildTo } from '../helpers/build.js';
import { publishedFiles } from '../helpers/output.js';
import { eachTestWorkspace, execSql, TestStore, type Workspace } from '../helpers/store.js';

const SHARD = { index: 1, count: 3 };
const USERS = 60;
const name = (id: number) => `member${id}`;
const inShard = (username: string) => sliceOf(username, SHARD.count) === SHARD.index;
/** Users by whether their name puts them in the shard. */
const ids = Array.from({ length: USERS }, (_, i) => i + 1);
const inside = ids.filter((id) => inShard(name(id)));
const outside = ids.filter((id) => !inShard(name(id)));
/** A name not taken yet, in the shard or out of it. */
const freshName = (wanted: boolean, from = 1000) => {
  for (let n = from; ; n++) if (inShard(`newcomer${n}`) === wanted) return `newcomer${n}`;
};

let dir: Workspace['dir'];
let db: string;
let out: string;
let session: StoreSession;

function store(file: string): void {
  const s = new TestStore(file);
  s.decoration('halo', 'Halo', 'halo.png');
  for (const id of ids) {
    s.user({
      id,
      username: name(id),
      bio: `Bio ${id}`,
      status: id % 7 === 0 ? 'suspended' : 'active',
      views: id,
      created_at: `2020-01-${String(1 + (id % 28)).padStart(2, '0')} 01:00:00`,
      decoration_id: id % 5 === 0 ? 'halo' : null,
    });
    s.social(id, id, 'GitHub', `https://github.com/u${id}`, 1);
    if (id % 4 === 0) s.badge(id, 'verified');
    if (id % 7 === 0) s.ban(id, 'Paused', 'spam', '2024-05-01 00:00:00');
  }
  s.close();
}
eachTestWorkspace(
  (w) => {
    ({ dir, db, out } = w);
    session = new StoreSession(db);
  },
  { fill: store },
);
afterEach(() => session.close());

const pass = (options: Partial<BuildOptions> = {}) => buildTo(db, out, { session, shard: SHARD, storeSettleMs: 60_000, ...options });

/** The tree and report equal a fresh build of the shard, byte for byte. */
function expectSameAsFresh(report: BuildReport): void {
  const other = join(dir.path, `fresh-${Math.random().toString(36).slice(2)}`);
  const fresh = buildTo(db, other, { shard: SHARD, fullPass: true });
  const files = publishedFiles(out);
  expect(files).toEqual(publishedFiles(other));
  for (const f of files) expect(readFileSync(join(out, f)).equals(readFileSync(join(other, f))), f).toBe(true);
  for (const key of ['profiles', 'creators', 'skipped', 'warnings'] as const) expect(report[key], key).toEqual(fresh[key]);
}

/** Writes `statement`; the pass reads `rowsRead` users and publishes what a fresh build does; the next reads none. */
function passAfter(statement: string, rowsRead: number): BuildReport {
  execSql(db, statement);
  const report = pass();
  expect(report.rowsRead, statement).toBe(rowsRead);
  expectSameAsFresh(report);
  expect(pass().rowsRead, `after ${statement}`).toBe(0);
  return report;
}

describe("a shard's selective passes (its copy holds the shard alone)", () => {
  it('reads its own users once, then only their changes; a change outside the shard reads nothing', () => {
    expect(inside.length).toBeGreaterThan(10);
    expect(outside.length).toBeGreaterThan(10);
    expect(pass().rowsRead).toBe(inside.length);
    passAfter(`UPDATE users SET views = views + 1 WHERE id IN (${inside[0]}, ${inside[1]})`, 2);
    const quiet = passAfter(`UPDATE users SET bio = 'Elsewhere' WHERE id = ${outside[0]}`, 0);
    expect(quiet.files.written).toBe(0);
  });

  it('publishes users who enter the shard (new, renamed, back to a published status) and removes those who leave', () => {
    pass();
    const [a, b] = outside;
    const [c, d] = inside;
    passAfter(
      `INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (500, '${freshName(true)}', 'N', '', '2025-01-01 00:00:00', 0, 'active')`,
      1,
    );
    passAfter(
      `INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (501, '${freshName(false)}', 'N', '', '2025-01-01 00:00:00', 0, 'active')`,
      0,
    );
    // a renamed into the shard, c renamed out of it; a's social and badges come along.
    passAfter(`UPDATE users SET username = '${freshName(true, 2000)}' WHERE id = ${a}`, 1);
    const left = passAfter(`UPDATE users SET username = '${freshName(false, 3000)}' WHERE id = ${c}`, 0);
    expect(left.files.removed).toBeGreaterThan(0);
    passAfter(`UPDATE users SET status = 'inactive' WHERE id = ${d}`, 0);
    passAfter(`UPDATE users SET status = 'active' WHERE id = ${d}`, 1);
    const gone = inside[2];
    passAfter(
      `DELETE FROM socials WHERE user_id = ${gone}; DELETE FROM badges WHERE user_id = ${gone}; DELETE FROM bans WHERE user_id = ${gone}; DELETE FROM users WHERE id = ${gone}`,
      0,
    );
    passAfter(`UPDATE users SET status = 'deleted' WHERE id = ${b}`, 0);
  });

  it("finds changes in every table for its users: socials (moved across the shard's edge too), badges, bans, decorations", () => {
    pass();
    const [a, b] = inside;
    const [x, y] = outside;
    passAfter(`UPDATE socials SET url = 'https://github.com/new' WHERE id = ${a}`, 1);
    passAfter(
      `INSERT INTO socials (id, user_id, platform, url, position) VALUES (900, ${b}, 'Mastodon', 'https://social.example/@b', 2)`,
      1,
    );
    passAfter(`DELETE FROM socials WHERE id = 900`, 1);
    // Moved from a user outside to one inside, then back out.
    passAfter(`UPDATE socials SET user_id = ${b} WHERE id = ${x}`, 1);
    passAfter(`UPDATE socials SET user_id = ${x} WHERE id = ${x}`, 1);
    passAfter(`UPDATE socials SET url = 'https://github.com/other' WHERE id = ${y}`, 0);
    passAfter(`INSERT INTO badges (user_id, badge) VALUES (${a}, 'official'), (${x}, 'official')`, 1);
    passAfter(`DELETE FROM badges WHERE user_id = ${a}`, 1);
    const banned = inside.find((id) => id % 7 === 0)!;
    passAfter(`UPDATE bans SET reason = 'abuse' WHERE user_id = ${banned}`, 1);
    passAfter(`UPDATE bans SET reason = 'abuse' WHERE user_id = ${outside.find((id) => id % 7 === 0)!}`, 0);
    passAfter("UPDATE decorations SET name = 'Golden halo' WHERE id = 'halo'", inside.filter((id) => id % 5 === 0).length);
  });

  it('a user who enters the shard with socials, badges and a ban is copied whole: later changes to them are found', () => {
    pass();
    const x = outside.find((id) => id % 7 === 0)!;
    passAfter(
      `INSERT INTO badges (user_id, badge) VALUES (${x}, 'helper'); UPDATE users SET username = '${freshName(true, 4000)}' WHERE id = ${x}`,
      1,
    );
    passAfter(`UPDATE socials SET url = 'https://github.com/moved' WHERE user_id = ${x}`, 1);
    passAfter(`DELETE FROM badges WHERE user_id = ${x}`, 1);
    passAfter(`UPDATE bans SET message = 'Back soon' WHERE user_id = ${x}`, 1);
  });
});
