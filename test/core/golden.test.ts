/**
 * Whole documents for representative profiles of the sample store (data/sample.sql), written out by
 * hand from the contract and compared byte for byte with what the build wrote.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTo } from '../helpers/build.js';
import { tempDir, TestStore } from '../helpers/store.js';

let dir: ReturnType<typeof tempDir>;
let out: string;

beforeAll(() => {
  dir = tempDir();
  const db = join(dir.path, 'sample.db');
  TestStore.sample(db).close();
  out = join(dir.path, 'dist');
  // Snapshot 2026-01-01T00:00:00Z, reproducible (executionTimeMs 0).
  buildTo(db, out, { baseUrl: 'https://profiles.example.com/' });
});
afterAll(() => dir.cleanup());

const META = { timestamp: '2026-01-01T00:00:00.000Z', version: 'v1', executionTimeMs: 0 };
const bytes = (path: string) => readFileSync(join(out, path), 'utf8');
const envelope = (data: unknown) => JSON.stringify({ success: true, data, meta: META });

const ALICE = {
  username: 'Alice',
  displayName: 'Alice Liddell',
  bio: 'Curious creator. Down the rabbit hole since 2021.',
  avatarUrl: 'https://profiles.example.com/api/avatar?u=Alice',
  pageUrl: 'https://profiles.example.com/p/Alice',
  hasCustomDomain: true,
  customDomain: 'alice.example.com',
  accountAgeDays: 1766, // 2021-03-01T12:00Z -> 2026-01-01T00:00Z is 1766.5 days
  createdAt: '2021-03-01T12:00:00.000Z',
  views: 1234,
  badges: { isVerified: true, isOfficial: true, isHelper: true, list: ['official', 'verified', 'helper'] },
  avatarDecoration: {
    id: 'halo_gold',
    name: 'Golden Halo',
    file: 'halo_gold.png',
    url: 'https://profiles.example.com/api/decoration?f=halo_gold.png',
  },
  socials: [
    { platform: 'discord', url: 'https://discord.gg/alice' },
    { platform: 'github', url: 'https://github.com/alice' },
  ],
  status: 'active',
  banInfo: { isBanned: false, message: null, reason: null, bannedAt: null },
};

const DAVE = {
  username: 'dave_99',
  displayName: 'Dave',
  bio: 'Suspended for a while.',
  avatarUrl: 'https://profiles.example.com/api/avatar?u=dave_99',
  pageUrl: 'https://profiles.example.com/p/dave_99',
  hasCustomDomain: false,
  customDomain: null,
  accountAgeDays: 2182, // 2020-01-10T10:10:10Z -> 2026-01-01
  createdAt: '2020-01-10T10:10:10.000Z',
  views: 55,
  badges: { isVerified: false, isOfficial: false, isHelper: false, list: [] },
  avatarDecoration: null,
  socials: [{ platform: 'github', url: 'https://github.com/dave99' }],
  status: 'suspended',
  banInfo: { isBanned: true, message: 'This account is suspended pending review.', reason: 'spam', bannedAt: '2024-05-01T08:30:00.000Z' },
};

const CAROL = {
  username: 'Carol.Dev',
  displayName: 'Carol "the dev" O\'Neil',
  bio: 'Line one\nLine two with émoji 🎨 and </script><script>alert(1)</script> and a \\ backslash',
  avatarUrl: 'https://profiles.example.com/api/avatar?u=Carol.Dev',
  pageUrl: 'https://profiles.example.com/p/Carol.Dev',
  hasCustomDomain: false,
  customDomain: null,
  accountAgeDays: 1402, // 2022-02-28T23:59:59.123Z -> 2026-01-01
  createdAt: '2022-02-28T23:59:59.123Z',
  views: 98765,
  badges: { isVerified: false, isOfficial: false, isHelper: true, list: ['helper'] },
  avatarDecoration: null,
  socials: [],
  status: 'active',
  banInfo: { isBanned: false, message: null, reason: null, bannedAt: null },
};

describe('golden documents from the sample store', () => {
  it('alice: active, every badge, decoration, custom domain, ordered socials', () => {
    expect(bytes('api/v1/users/alice')).toBe(envelope(ALICE));
  });

  it('dave_99: suspended with a bans row', () => {
    expect(bytes('api/v1/users/dave_99')).toBe(envelope(DAVE));
  });

  it('carol.dev: ISO created_at with milliseconds, awkward text', () => {
    expect(bytes('api/v1/users/carol.dev')).toBe(envelope(CAROL));
  });

  it('the service-api alias holds the same bytes', () => {
    for (const name of ['alice', 'dave_99', 'carol.dev']) expect(bytes(`service-api/v1/users/${name}`)).toBe(bytes(`api/v1/users/${name}`));
  });

  it('the creators list holds exactly the active sample users in order, each as in its own document', () => {
    const list = JSON.parse(bytes('service-api/v1/creators'));
    expect(list.data.map((u: { username: string }) => u.username)).toEqual([
      'Alice',
      'amy.lee',
      'bob',
      'Carol.Dev',
      'niaj',
      'Olivia',
      'peggy',
      'Quentin',
      `sybil-${'x'.repeat(58)}`,
      'Uma',
      'Victor',
      'xavier',
      'yolanda',
      'zoe',
    ]);
    expect(list.data[0]).toEqual(ALICE);
    expect(list.data[3]).toEqual(CAROL);
    expect(list.meta).toEqual(META);
  });

  it('the USER_NOT_FOUND error document', () => {
    expect(bytes('_errors/user-not-found.json')).toBe(
      JSON.stringify({
        success: false,
        error: { status: 404, code: 'USER_NOT_FOUND', message: 'No active or suspended profile has this username.' },
        meta: META,
      }),
    );
  });
});
