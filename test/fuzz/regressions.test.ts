/** Bugs the fuzzers found, each pinned by a plain example. */
import { afterEach, expect, it } from 'vitest';
import { buildStore } from '../helpers/build.js';
import { publishedFiles, readJson } from '../helpers/output.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

it("ids past 2^53 never mix two users: neither gets the other's socials, badges or ban, and both are skipped with a warning", () => {
  // 2^60 and 2^60 + 1 read back as the same JavaScript number.
  const first = 2n ** 60n,
    second = 2n ** 60n + 1n;
  const { dir, out, report } = buildStore((s) => {
    const user = s.db.prepare(
      "INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (?, ?, '', '', '2020-01-01 00:00:00', 1, ?)",
    );
    user.run(first, 'first', 'suspended');
    user.run(second, 'second', 'suspended');
    user.run(7, 'seventh', 'active');
    s.db
      .prepare("INSERT INTO socials (user_id, platform, url, position) VALUES (?, 'github', 'https://github.com/second-only', 1)")
      .run(second);
    s.db.prepare("INSERT INTO badges (user_id, badge) VALUES (?, 'official')").run(second);
    s.db
      .prepare(
        "INSERT INTO bans (user_id, message, reason, banned_at) VALUES (?, 'only second is banned for this', 'r', '2020-01-01 00:00:00')",
      )
      .run(second);
  });
  cleanups.push(dir.cleanup);
  const files = publishedFiles(out).filter((f) => f.startsWith('api/v1/users/'));
  expect(files).toEqual(['api/v1/users/seventh']);
  expect(readJson(out, 'api/v1/users/seventh').data.socials).toEqual([]);
  expect(report.warnings.filter((w) => /2\^53/.test(w.reason))).toHaveLength(2);
});
