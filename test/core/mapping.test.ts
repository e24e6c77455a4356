/**
 * One test per mapping rule and per warning of docs/store.md, each on a real SQLite store
 * built to the contract's schema in a temp folder, read back from the files the build wrote.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildStore } from '../helpers/build.js';
import { profile, readJson } from '../helpers/output.js';
import { validateTree } from '../helpers/schemas.js';
import type { TestStore } from '../helpers/store.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

function built(fill: (s: TestStore) => void, options: Parameters<typeof buildStore>[1] = {}) {
  const result = buildStore(fill, options);
  cleanups.push(result.dir.cleanup);
  // Whatever the rule under test, every document written must match the contract's schemas.
  expect(validateTree(result.out)).toEqual([]);
  return result;
}

const warningsFor = (report: { warnings: { id: number; reason: string }[] }, id: number) =>
  report.warnings.filter((w) => w.id === id).map((w) => w.reason);

describe('username', () => {
  it('keeps the stored letter case in the document and writes the file at the lower-cased name', () => {
    const { out } = built((s) => s.user({ id: 1, username: 'MiXeD.Case_1-x' }));
    expect(profile(out, 'mixed.case_1-x').data.username).toBe('MiXeD.Case_1-x');
    expect(existsSync(join(out, 'api/v1/users/MiXeD.Case_1-x'))).toBe(false);
  });

  it('publishes 1 and 64 characters, skips 65 with a warning', () => {
    const { out, report } = built((s) =>
      s
        .user({ id: 1, username: 'a' })
        .user({ id: 2, username: 'b'.repeat(64) })
        .user({ id: 3, username: 'c'.repeat(65) }),
    );
    expect(profile(out, 'a').data.username).toBe('a');
    expect(profile(out, 'b'.repeat(64)).data.username).toBe('b'.repeat(64));
    expect(existsSync(join(out, 'api/v1/users', 'c'.repeat(65)))).toBe(false);
    expect(warningsFor(report, 3)).toEqual([expect.stringMatching(/username is not publishable.*not published/)]);
    expect(report.skipped).toBe(1);
  });

  it.each([
    ['.dotfirst'],
    ['with space'],
    ['slash/name'],
    ['back\\slash'],
    ['..'],
    ['ünïcode'],
    ['emoji😀'],
    [''],
    ['semi;colon'],
    ['%2e%2e'],
  ])('skips %j with a warning naming the row id only', (username) => {
    const { out, report } = built((s) => s.user({ id: 7, username, email: 'secret@private.invalid' }));
    expect(report.profiles).toBe(0);
    expect(warningsFor(report, 7)).toHaveLength(1);
    expect(JSON.stringify(report.warnings)).not.toContain('secret@private.invalid');
    expect(readJson(out, 'service-api/v1/creators').data).toEqual([]);
  });

  it('allows dots, underscores and dashes after the first character', () => {
    const { out } = built((s) => s.user({ id: 1, username: 'a.b_c-d' }).user({ id: 2, username: '_x' }).user({ id: 3, username: '-y' }));
    expect(profile(out, 'a.b_c-d').data.username).toBe('a.b_c-d');
    expect(profile(out, '_x').data.username).toBe('_x');
    expect(profile(out, '-y').data.username).toBe('-y');
  });
});

describe('case-insensitive duplicates (a store without the NOCASE constraint)', () => {
  it('publishes the lowest id and skips the others with a warning', () => {
    const { out, report } = built((s) => {
      // Recreate users without UNIQUE COLLATE NOCASE, as a store not following the constraint would.
      s.exec(`DROP TABLE users; CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT NOT NULL, display_name TEXT NOT NULL, bio TEXT NOT NULL,
        custom_domain TEXT, created_at TEXT NOT NULL, views INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL, decoration_id TEXT,
        email TEXT, password_hash TEXT, last_login_ip TEXT)`);
      s.user({ id: 5, username: 'ALICE', display_name: 'five' })
        .user({ id: 2, username: 'alice', display_name: 'two' })
        .user({ id: 9, username: 'Alice', display_name: 'nine' })
        .user({ id: 3, username: 'bob' });
    });
    expect(profile(out, 'alice').data.displayName).toBe('two');
    expect(report.profiles).toBe(2);
    expect(warningsFor(report, 5)).toEqual([expect.stringMatching(/equals another user's ignoring letter case/)]);
    expect(warningsFor(report, 9)).toHaveLength(1);
    expect(readJson(out, 'service-api/v1/creators').data.map((u: any) => u.username)).toEqual(['alice', 'bob']);
  });
});

describe('text fields', () => {
  it('publishes display_name and bio unchanged, any Unicode included', () => {
    const bio = 'Line 1\nLine "2" </script><script>alert(1)</script> \\ emoji 🎨 \u2028 tab\t end';
    const { out } = built((s) => s.user({ id: 1, username: 'u', display_name: 'Zoë “Z” 東京', bio }));
    const user = profile(out, 'u').data;
    expect(user.displayName).toBe('Zoë “Z” 東京');
    expect(user.bio).toBe(bio);
  });

  it('publishes empty display_name and bio as empty strings', () => {
    const { out } = built((s) => s.user({ id: 1, username: 'u', display_name: '', bio: '' }));
    expect(profile(out, 'u').data).toMatchObject({ displayName: '', bio: '' });
  });
});

describe('URLs', () => {
  it('builds avatarUrl (query-encoded) and pageUrl (path-encoded) from the base URL', () => {
    const { out } = built((s) => s.user({ id: 1, username: 'Al.ice_-1' }));
    expect(profile(out, 'al.ice_-1').data).toMatchObject({
      avatarUrl: 'https://profiles.example.com/api/avatar?u=Al.ice_-1',
      pageUrl: 'https://profiles.example.com/p/Al.ice_-1',
    });
  });

  it('keeps a base URL path prefix', () => {
    const { out } = built((s) => s.user({ id: 1, username: 'u' }), { baseUrl: 'https://example.com/community' });
    expect(profile(out, 'u').data.avatarUrl).toBe('https://example.com/community/api/avatar?u=u');
  });

  it('query-encodes the decoration file name', () => {
    const { out } = built((s) =>
      s.decoration('d1', 'Stars & Moon', 'stars & moon?#.png').user({ id: 1, username: 'u', decoration_id: 'd1' }),
    );
    expect(profile(out, 'u').data.avatarDecoration).toEqual({
      id: 'd1',
      name: 'Stars & Moon',
      file: 'stars & moon?#.png',
      url: 'https://profiles.example.com/api/decoration?f=stars%20%26%20moon%3F%23.png',
    });
  });
});

describe('custom domain', () => {
  it.each([
    [' me.example.com \n', true, 'me.example.com'],
    ['me.example.com', true, 'me.example.com'],
    ['', false, null],
    ['   ', false, null],
    [null, false, null],
  ])('%j -> hasCustomDomain %s, customDomain %j', (value, has, domain) => {
    const { out } = built((s) => s.user({ id: 1, username: 'u', custom_domain: value }));
    expect(profile(out, 'u').data).toMatchObject({ hasCustomDomain: has, customDomain: domain });
  });
});

describe('dates', () => {
  it.each([
    ['2024-03-01 12:00:00', '2024-03-01T12:00:00.000Z'],
    ['2024-03-01T12:00:00Z', '2024-03-01T12:00:00.000Z'],
    ['2024-03-01T12:00:00.5Z', '2024-03-01T12:00:00.500Z'],
    ['2024-03-01T12:00:00.123Z', '2024-03-01T12:00:00.123Z'],
    ['2024-02-29 23:59:59', '2024-02-29T23:59:59.000Z'],
    ['0099-01-01 00:00:00', '0099-01-01T00:00:00.000Z'],
  ])('created_at %j is published as %j', (stored, published) => {
    const { out } = built((s) => s.user({ id: 1, username: 'u', created_at: stored }));
    expect(profile(out, 'u').data.createdAt).toBe(published);
  });

  it.each([
    ['yesterday'],
    ['2023-02-29 00:00:00'],
    ['2024-13-01 00:00:00'],
    ['2024-01-01 24:00:00'],
    ['2024-01-01T00:00:00'],
    ['2024-01-01 00:00:00Z'],
    ['2024-01-01T00:00:00+02:00'],
    ['2024-1-1 00:00:00'],
    [''],
    [20240101],
  ])('skips a row whose created_at is %j, with a warning', (stored) => {
    const { report } = built((s) => s.user({ id: 4, username: 'u', created_at: stored }));
    expect(report.profiles).toBe(0);
    expect(warningsFor(report, 4)).toEqual([expect.stringMatching(/created_at.*not published/)]);
  });

  it('counts whole days to the snapshot time, rounded down; 0 for a future date', () => {
    // Snapshot time is 2026-01-01T00:00:00Z.
    const { out } = built((s) =>
      s
        .user({ id: 1, username: 'day0', created_at: '2025-12-31 00:00:01' })
        .user({ id: 2, username: 'day1', created_at: '2025-12-31 00:00:00' })
        .user({ id: 3, username: 'leap', created_at: '2024-02-29 00:00:00' })
        .user({ id: 4, username: 'future', created_at: '2099-01-01 00:00:00' }),
    );
    expect(profile(out, 'day0').data.accountAgeDays).toBe(0);
    expect(profile(out, 'day1').data.accountAgeDays).toBe(1);
    expect(profile(out, 'leap').data.accountAgeDays).toBe(672);
    expect(profile(out, 'future').data.accountAgeDays).toBe(0);
  });
});

describe('views', () => {
  it('publishes the view count', () => {
    const { out } = built((s) => s.user({ id: 1, username: 'u', views: 9_007_199_254_740_991 }));
    expect(profile(out, 'u').data.views).toBe(9_007_199_254_740_991);
  });

  it('publishes 0 with a warning for a negative or non-integer count', () => {
    const { out, report } = built((s) => s.user({ id: 1, username: 'neg', views: -5 }).user({ id: 2, username: 'txt', views: 'many' }));
    expect(profile(out, 'neg').data.views).toBe(0);
    expect(profile(out, 'txt').data.views).toBe(0);
    expect(warningsFor(report, 1)).toEqual([expect.stringMatching(/views/)]);
    expect(warningsFor(report, 2)).toEqual([expect.stringMatching(/views/)]);
  });
});

describe('badges', () => {
  it('sets the flags and lists held known badges in the order official, verified, helper', () => {
    const { out, report } = built((s) =>
      s.user({ id: 1, username: 'u' }).badge(1, 'helper').badge(1, 'vip').badge(1, 'verified').badge(1, 'official'),
    );
    expect(profile(out, 'u').data.badges).toEqual({
      isVerified: true,
      isOfficial: true,
      isHelper: true,
      list: ['official', 'verified', 'helper'],
    });
    expect(report.warnings).toEqual([]); // unknown badges are simply not published
  });

  it('publishes no badges as all false and an empty list', () => {
    const { out } = built((s) => s.user({ id: 1, username: 'u' }).badge(2, 'official'));
    expect(profile(out, 'u').data.badges).toEqual({ isVerified: false, isOfficial: false, isHelper: false, list: [] });
  });

  it('publishes a single badge', () => {
    const { out } = built((s) => s.user({ id: 1, username: 'u' }).badge(1, 'helper'));
    expect(profile(out, 'u').data.badges).toEqual({ isVerified: false, isOfficial: false, isHelper: true, list: ['helper'] });
  });
});

describe('avatar decoration', () => {
  it('is null when the user has none', () => {
    const { out } = built((s) => s.user({ id: 1, username: 'u' }));
    expect(profile(out, 'u').data.avatarDecoration).toBeNull();
  });

  it('is null with a warning when decoration_id names no decoration', () => {
    const { out, report } = built((s) => s.user({ id: 1, username: 'u', decoration_id: 'gone' }));
    expect(profile(out, 'u').data.avatarDecoration).toBeNull();
    expect(warningsFor(report, 1)).toEqual([expect.stringMatching(/decoration_id names no decorations row/)]);
  });
});

describe('socials', () => {
  it('orders by position then id and lower-cases the platform', () => {
    const { out } = built((s) =>
      s
        .user({ id: 1, username: 'u' })
        .social(30, 1, 'Steam', 'https://steamcommunity.com/id/u', 2)
        .social(20, 1, 'GitHub', 'https://github.com/u', 1)
        .social(10, 1, 'DISCORD', 'https://discord.gg/u', 1)
        .social(40, 2, 'other', 'https://example.com/other-user', 0),
    );
    expect(profile(out, 'u').data.socials).toEqual([
      { platform: 'discord', url: 'https://discord.gg/u' },
      { platform: 'github', url: 'https://github.com/u' },
      { platform: 'steam', url: 'https://steamcommunity.com/id/u' },
    ]);
  });

  it.each([
    ['javascript:alert(1)'],
    ['ftp://example.com/u'],
    ['/relative/path'],
    ['github.com/u'],
    ['mailto:u@example.com'],
    ['data:text/html,hi'],
    ['https://user:pass@example.com/u'],
    ['http://'],
    [''],
  ])('drops %j with a warning and keeps the rest', (url) => {
    const { out, report } = built((s) =>
      s.user({ id: 1, username: 'u' }).social(1, 1, 'bad', url, 1).social(2, 1, 'good', 'https://good.example/u', 2),
    );
    expect(profile(out, 'u').data.socials).toEqual([{ platform: 'good', url: 'https://good.example/u' }]);
    expect(warningsFor(report, 1)).toEqual([expect.stringMatching(/not an absolute http\(s\) URL.*dropped/)]);
  });

  it('publishes an empty list for a user without socials', () => {
    const { out } = built((s) => s.user({ id: 1, username: 'u' }));
    expect(profile(out, 'u').data.socials).toEqual([]);
  });

  it('publishes http and https URLs, trimmed', () => {
    const { out } = built((s) =>
      s.user({ id: 1, username: 'u' }).social(1, 1, 'a', ' http://a.example/u ', 1).social(2, 1, 'b', 'HTTPS://B.example/U?x=1#top', 2),
    );
    expect(profile(out, 'u').data.socials).toEqual([
      { platform: 'a', url: 'http://a.example/u' },
      { platform: 'b', url: 'https://b.example/U?x=1#top' },
    ]);
  });
});

describe('status and banInfo', () => {
  const fill = (s: TestStore) =>
    s
      .user({ id: 1, username: 'act', status: 'active' })
      .user({ id: 2, username: 'sus', status: 'suspended' })
      .user({ id: 3, username: 'ban', status: 'banned' })
      .user({ id: 4, username: 'ina', status: 'inactive' })
      .user({ id: 5, username: 'del', status: 'deleted' })
      .user({ id: 6, username: 'nob', status: 'suspended' })
      .user({ id: 7, username: 'odd', status: 'Active' })
      .ban(2, 'Suspended pending review.', 'spam', '2024-05-01 08:30:00')
      .ban(3, null, null, '2023-12-24T18:00:00.25Z')
      .ban(1, 'stale ban row of an active user', 'old', '2020-01-01 00:00:00');

  it('publishes active with isBanned false and null ban fields, even when a bans row exists', () => {
    const { out } = built(fill);
    expect(profile(out, 'act').data).toMatchObject({
      status: 'active',
      banInfo: { isBanned: false, message: null, reason: null, bannedAt: null },
    });
  });

  it('publishes suspended and banned as "suspended" with the bans row', () => {
    const { out } = built(fill);
    expect(profile(out, 'sus').data).toMatchObject({
      status: 'suspended',
      banInfo: { isBanned: true, message: 'Suspended pending review.', reason: 'spam', bannedAt: '2024-05-01T08:30:00.000Z' },
    });
    expect(profile(out, 'ban').data).toMatchObject({
      status: 'suspended',
      banInfo: { isBanned: true, message: null, reason: null, bannedAt: '2023-12-24T18:00:00.250Z' },
    });
  });

  it('publishes a suspended user without a bans row with null ban fields and a warning', () => {
    const { out, report } = built(fill);
    expect(profile(out, 'nob').data.banInfo).toEqual({ isBanned: true, message: null, reason: null, bannedAt: null });
    expect(warningsFor(report, 6)).toEqual([expect.stringMatching(/no bans row/)]);
  });

  it('does not publish inactive, deleted or unknown statuses (unknown with a warning)', () => {
    const { out, report } = built(fill);
    for (const name of ['ina', 'del', 'odd']) {
      expect(existsSync(join(out, 'api/v1/users', name))).toBe(false);
      expect(existsSync(join(out, 'service-api/v1/users', name))).toBe(false);
    }
    expect(warningsFor(report, 4)).toEqual([]);
    expect(warningsFor(report, 5)).toEqual([]);
    expect(warningsFor(report, 7)).toEqual([expect.stringMatching(/status "Active" is not one of/)]);
  });

  it('lists only active users in the creators list, ordered by lower-cased username', () => {
    const { out, report } = built((s) => {
      fill(s);
      s.user({ id: 10, username: 'Zed' })
        .user({ id: 11, username: 'alpha' })
        .user({ id: 12, username: 'Beta' })
        .user({ id: 13, username: '_under' })
        .user({ id: 14, username: 'a.b' });
    });
    const list = readJson(out, 'service-api/v1/creators');
    expect(list.data.map((u: any) => u.username)).toEqual(['_under', 'a.b', 'act', 'alpha', 'Beta', 'Zed']);
    expect(list.data.every((u: any) => u.status === 'active')).toBe(true);
    expect(report.creators).toBe(6);
    // Each element is byte for byte the data of that user's own document.
    const own = readFileSync(join(out, 'api/v1/users/beta'), 'utf8');
    expect(own).toContain(JSON.stringify(list.data[4]));
  });
});

describe('envelope and meta', () => {
  it('wraps each profile in {success, data, meta} with version v1 and the snapshot time', () => {
    const { out } = built((s) => s.user({ id: 1, username: 'u' }));
    const doc = profile(out, 'u');
    expect(Object.keys(doc)).toEqual(['success', 'data', 'meta']);
    expect(doc.success).toBe(true);
    expect(doc.meta).toEqual({ timestamp: '2026-01-01T00:00:00.000Z', version: 'v1', executionTimeMs: 0 });
    expect(Object.keys(doc.data)).toEqual([
      'username',
      'displayName',
      'bio',
      'avatarUrl',
      'pageUrl',
      'hasCustomDomain',
      'customDomain',
      'accountAgeDays',
      'createdAt',
      'views',
      'badges',
      'avatarDecoration',
      'socials',
      'status',
      'banInfo',
    ]);
  });

  it('writes the four error documents with the envelope', () => {
    const { out } = built(() => {});
    expect(readJson(out, '_errors/user-not-found.json')).toMatchObject({ success: false, error: { status: 404, code: 'USER_NOT_FOUND' } });
    expect(readJson(out, '_errors/username-required.json')).toMatchObject({
      success: false,
      error: { status: 400, code: 'USERNAME_REQUIRED' },
    });
    expect(readJson(out, '_errors/not-found.json')).toMatchObject({ success: false, error: { status: 404, code: 'NOT_FOUND' } });
    expect(readJson(out, '_errors/method-not-allowed.json')).toMatchObject({
      success: false,
      error: { status: 405, code: 'METHOD_NOT_ALLOWED' },
      meta: { version: 'v1' },
    });
    expect(readJson(out, 'service-api/v1/creators')).toMatchObject({ success: true, data: [] });
  });
});
