/**
 * Random profile stores within the contract's schema (docs/store.md), with adversarial values,
 * written to real SQLite files. The generator labels what it cannot be asked back from SQLite (whether
 * a date is valid, and the ISO form it must be published as), so the oracle never reuses product code.
 */
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { SCHEMA_SQL } from '../helpers/store.js';

/** A store date and what the contract says of it: valid (with its ISO form) or not. */
export interface LabelledDate {
  value: unknown;
  iso: string | null;
}

export interface ModelUser {
  id: number | bigint;
  username: string;
  display_name: string;
  bio: string;
  custom_domain: string | null;
  created_at: LabelledDate;
  views: number | bigint | string;
  status: string;
  decoration_id: string | null;
  badges: string[];
  socials: { platform: string; url: string; position: number }[];
  ban: { message: string | null; reason: string | null; banned_at: LabelledDate } | null;
}

export interface ModelStore {
  /** false: a store without the UNIQUE COLLATE NOCASE constraint (names equal but for case can coexist). */
  unique: boolean;
  decorations: { id: string; name: string; file: string }[];
  users: ModelUser[];
}

/** One megabyte (of UTF-8) in a single value. */
export const MEGABYTE = 'é'.repeat(1 << 19);

/** Hostile fragments: separators, controls, lone surrogates, traversal, markup, normalisation pairs. */
const PIECES = [
  '\u2028',
  '\u2029',
  '\0',
  '\ud800',
  '\udfff',
  '\udc00\ud800',
  '\uffff',
  '\ufeff',
  '\u202e',
  '\r\n',
  '\t',
  '"',
  "'",
  '\\',
  '`',
  '../',
  '..\\',
  '%2e%2e',
  '%2e%2e%2f',
  '%00',
  '/',
  '</script><script>alert(1)</script>',
  '<!--',
  '${x}',
  '{{x}}',
  'e\u0301',
  '\u00e9',
  'ﬃ',
  'İ',
  'ß',
  '\u{1f600}',
  '\u{1f469}\u200d\u{1f4bb}',
  'K',
  '\u212a',
  '\u0000\u0001\u001f\u007f',
  'javascript:alert(1)',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  'x'.repeat(300),
];

export const hostileText: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 150,
    arbitrary: fc
      .array(
        fc.oneof(fc.constantFrom(...PIECES), fc.string({ unit: 'binary', maxLength: 12 }), fc.string({ unit: 'grapheme', maxLength: 6 })),
        { maxLength: 6 },
      )
      .map((parts) => parts.join('')),
  },
  { weight: 1, arbitrary: fc.constant(MEGABYTE) },
);

const publishableName = fc.stringMatching(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/);
/** Names of a small pool, so collisions ignoring case (and only by normalisation) are frequent. */
const POOL = [
  'alice',
  'Alice',
  'ALICE',
  'aLiCe',
  'bob',
  'Bob',
  'kelvin',
  'KELVIN',
  'caf\u00e9',
  'cafe\u0301',
  'x'.repeat(64),
  'X'.repeat(64),
  'a-b_c.d',
  '_',
  '-',
  '0',
];
const HOSTILE_NAMES = [
  '',
  '.',
  '..',
  '../etc/passwd',
  '..%2f..%2fetc',
  '%2e%2e',
  '%2E%2E',
  'a\\b',
  'a/b',
  '.hidden',
  '.profile-snapshot',
  ' alice',
  'alice ',
  'ali ce',
  'ali\0ce',
  'ali\u2028ce',
  'x'.repeat(65),
  'ᴬlice',
  '\u212aelvin',
  'ａｌｉｃｅ',
  'manifest',
  'creators',
  '_errors',
  'con',
  'nul',
  'a@b',
  '@alice',
];
const username = fc.oneof(
  { weight: 6, arbitrary: publishableName },
  { weight: 4, arbitrary: fc.constantFrom(...POOL) },
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_NAMES) },
  { weight: 1, arbitrary: hostileText },
);

const pad = (n: number, width = 2) => String(n).padStart(width, '0');
/** A valid calendar date in years 0001-9999 (leap days included), in either store form. */
const validDate: fc.Arbitrary<LabelledDate> = fc
  .record({
    ms: fc.integer({ min: -62_135_596_800_000 /* 0001-01-01 */, max: Date.UTC(9999, 11, 31, 23, 59, 59, 999) }),
    iso: fc.boolean(),
    fraction: fc.constantFrom('', '.1', '.12', '.123', '.123456', '.999999999'),
  })
  .map(({ ms, iso, fraction }) => {
    const d = new Date(ms);
    const y = d.getUTCFullYear();
    const day = `${pad(y, 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
    const time = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
    if (!iso) return { value: `${day} ${time}`, iso: `${day}T${time}.000Z` };
    const millis = (fraction.slice(1) + '000').slice(0, 3);
    return { value: `${day}T${time}${fraction}Z`, iso: `${day}T${time}.${millis}Z` };
  });
function leapDay(year: number, iso: boolean): LabelledDate {
  const day = `${pad(year, 4)}-02-29`;
  return { value: iso ? `${day}T12:00:00Z` : `${day} 12:00:00`, iso: `${day}T12:00:00.000Z` };
}
const SPECIAL_VALID: LabelledDate[] = [
  leapDay(2024, false),
  leapDay(2000, true),
  leapDay(1600, false),
  leapDay(9996, true),
  { value: '0001-01-01 00:00:00', iso: '0001-01-01T00:00:00.000Z' },
  { value: '9999-12-31T23:59:59.999Z', iso: '9999-12-31T23:59:59.999Z' },
  { value: '1970-01-01 00:00:00', iso: '1970-01-01T00:00:00.000Z' },
  { value: '2026-01-02 00:00:00', iso: '2026-01-02T00:00:00.000Z' }, // after the snapshot time
];
const INVALID_DATES: unknown[] = [
  '2023-02-29 00:00:00',
  '1900-02-29T00:00:00Z',
  '2100-02-29 00:00:00',
  '2024-13-01 00:00:00',
  '2024-00-10 00:00:00',
  '2024-04-31 00:00:00',
  '2024-01-01 24:00:00',
  '2024-01-01 23:60:00',
  '2024-01-01 23:59:60',
  '2024-01-01T00:00:00',
  '2024-01-01 00:00:00Z',
  '2024-01-01 00:00:00.123',
  '2024-01-01T00:00:00+01:00',
  '+275760-09-13T00:00:00.000Z',
  '-000001-01-01T00:00:00.000Z',
  '10000-01-01 00:00:00',
  '2024-1-1 0:0:0',
  'never',
  '',
  'now',
  '2024-01-01',
  ' 2024-01-01 00:00:00',
  '2024-01-01 00:00:00\n',
  '２０２４-01-01 00:00:00',
  1704067200,
  0,
  -1,
  1.5,
];
const storeDate: fc.Arbitrary<LabelledDate> = fc.oneof(
  { weight: 5, arbitrary: validDate },
  { weight: 2, arbitrary: fc.constantFrom(...SPECIAL_VALID) },
  { weight: 2, arbitrary: fc.constantFrom(...INVALID_DATES).map((value) => ({ value, iso: null })) },
);

const views = fc.oneof(
  fc.nat(),
  fc.integer({ min: -1_000_000_000, max: -1 }),
  fc.constantFrom(0, Number.MAX_SAFE_INTEGER, 2 ** 53, 2 ** 62, 1.5, -0.5, 1e300),
  fc.constantFrom(2n ** 63n - 1n, -(2n ** 63n), 2n ** 53n + 1n),
  fc.constantFrom('12', 'many', '', '0x10', '1e3'),
);

const STATUSES = ['active', 'suspended', 'banned', 'inactive', 'deleted'];
const status = fc.oneof(
  { weight: 10, arbitrary: fc.constantFrom(...STATUSES) },
  { weight: 1, arbitrary: fc.constantFrom('Active', 'ACTIVE', 'active ', '', 'pending', 'banned\0', 'suspended\u2028') },
);

const URLS = [
  'https://github.com/alice',
  'http://example.com/a?b=c#d',
  ' https://padded.example.com ',
  'HTTPS://UPPER.EXAMPLE.COM/X',
  'https://user:secret@example.com/',
  'http://user@example.com/',
  'https://:pw@example.com/',
  'javascript:alert(1)',
  'JaVaScRiPt:alert(1)',
  ' javascript:alert(1)',
  'java\tscript:alert(1)',
  'data:text/html,<script>alert(1)</script>',
  'vbscript:x',
  'file:///etc/passwd',
  'ftp://example.com/',
  '//evil.example.com/',
  '/relative',
  'example.com',
  'https://',
  'http://',
  'https:///x',
  'http://[::1]:8080/',
  'https://例え.jp/パス',
  'https://example.com/%2e%2e/%2e%2e/',
  'https://example.com/../../etc',
  'https://example.com/\u2028',
  'https://exa mple.com',
  'https://example.com\\@evil.com',
  'http://0x7f.1/',
  'mailto:a@b.c',
  '',
];
const social = fc.record({
  platform: fc.oneof(fc.constantFrom('GitHub', 'discord', ' Steam ', 'X', '', '  ', 'İnstagram'), hostileText),
  url: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...URLS) },
    { weight: 1, arbitrary: hostileText },
    { weight: 1, arbitrary: fc.webUrl({ withQueryParameters: true, withFragments: true }) },
  ),
  position: fc.integer({ min: -2, max: 3 }),
});

const BADGES = ['official', 'verified', 'helper', 'Official', 'VERIFIED', 'staff', '', 'helper '];

export function storeArbitrary(maxUsers = 14): fc.Arbitrary<ModelStore> {
  const decorationIds = ['halo', 'Halo', '../halo', 'x\u2028y', '%2e%2e'];
  return fc
    .record({
      unique: fc.boolean(),
      decorations: fc.subarray(decorationIds).chain((ids) =>
        fc.tuple(
          ...ids.map((id) =>
            fc.record({
              id: fc.constant(id),
              name: fc.oneof(fc.constantFrom('Halo', ''), hostileText),
              file: fc.oneof(fc.constantFrom('halo_gold.png', '../../etc/passwd', '%2e%2e/x.png', 'a b&c=d?.png', 'x\\y.png'), hostileText),
            }),
          ),
        ),
      ),
      ids: fc.uniqueArray(
        fc.oneof(
          { weight: 20, arbitrary: fc.integer({ min: 1, max: 60 }) },
          {
            weight: 1,
            arbitrary: fc.constantFrom<number | bigint>(-5, 0, 2 ** 31, Number.MAX_SAFE_INTEGER, 2n ** 60n, 2n ** 60n + 1n, 2n ** 63n - 1n),
          },
        ),
        { minLength: 1, maxLength: maxUsers },
      ),
    })
    .chain(({ unique, decorations, ids }) =>
      fc
        .tuple(
          ...ids.map((id) =>
            fc.record({
              id: fc.constant(id),
              username,
              display_name: fc.oneof(fc.constantFrom('Alice', ''), hostileText),
              bio: fc.oneof(fc.constantFrom('', 'Hello\nworld'), hostileText),
              custom_domain: fc.oneof(fc.constant(null), fc.constantFrom('', '   ', 'me.example.com', ' me.example.com '), hostileText),
              created_at: storeDate,
              views,
              status,
              decoration_id: fc.oneof(fc.constant(null), fc.constantFrom(...decorationIds, 'missing')),
              badges: fc.subarray(BADGES),
              socials: fc.array(social, { maxLength: 4 }),
              ban: fc.option(
                fc.record({
                  message: fc.option(hostileText),
                  reason: fc.option(hostileText),
                  banned_at: storeDate,
                }),
                { freq: 2 },
              ),
            }),
          ),
        )
        .map((users) => ({ unique, decorations, users })),
    );
}

/** The schema without UNIQUE COLLATE NOCASE on username (a store that lost the constraint). */
const SCHEMA_NOT_UNIQUE = SCHEMA_SQL.replace('TEXT NOT NULL UNIQUE COLLATE NOCASE', 'TEXT NOT NULL');

/**
 * Writes the model to a real SQLite file. Every private column holds a canary with `nonce`; rows the
 * schema refuses (a second name equal but for ASCII case under NOCASE) are left out. Returns the ids
 * actually stored.
 */
export function writeStore(file: string, model: ModelStore, nonce: string): void {
  if (!SCHEMA_SQL.includes('TEXT NOT NULL UNIQUE COLLATE NOCASE')) throw new Error('schema changed: update SCHEMA_NOT_UNIQUE');
  const db = new Database(file);
  // As in SQLite by default (better-sqlite3 turns them on): dangling references are part of the game.
  db.pragma('foreign_keys = OFF');
  db.exec(model.unique ? SCHEMA_SQL : SCHEMA_NOT_UNIQUE);
  const insertUser =
    db.prepare(`INSERT OR IGNORE INTO users (id, username, display_name, bio, custom_domain, created_at, views, status, decoration_id, email, password_hash, last_login_ip)
    VALUES (@id, @username, @display_name, @bio, @custom_domain, @created_at, @views, @status, @decoration_id, @email, @password_hash, @last_login_ip)`);
  const insertBadge = db.prepare('INSERT OR IGNORE INTO badges (user_id, badge) VALUES (?, ?)');
  const insertSocial = db.prepare('INSERT INTO socials (user_id, platform, url, position) VALUES (?, ?, ?, ?)');
  const insertBan = db.prepare('INSERT INTO bans (user_id, message, reason, banned_at) VALUES (?, ?, ?, ?)');
  const insertDecoration = db.prepare('INSERT INTO decorations (id, name, file) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (const d of model.decorations) insertDecoration.run(d.id, d.name, d.file);
    for (const u of model.users) {
      insertUser.run({
        ...u,
        created_at: u.created_at.value,
        email: `${u.bio.slice(0, 8)}PRIVATE-email-${nonce}@mail.invalid`,
        password_hash: `$argon2id$PRIVATE-hash-${nonce}`,
        last_login_ip: `10.0.0.1 PRIVATE-ip-${nonce}`,
      });
      for (const b of u.badges) insertBadge.run(u.id, b);
      for (const s of u.socials) insertSocial.run(u.id, s.platform, s.url, s.position);
      if (u.ban) insertBan.run(u.id, u.ban.message, u.ban.reason, u.ban.banned_at.value);
    }
  })();
  db.close();
}
