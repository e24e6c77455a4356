/**
 * Store row -> User object (docs/api.md, "The User object"), exactly as docs/store.md maps
 * each field. Pure: same row, base URL and snapshot time give the same object.
 */
import { Col, type StoreRow } from '../store/read.js';
import { parseStoreDate, wholeDaysBetween } from './dates.js';

export interface Badges {
  isVerified: boolean;
  isOfficial: boolean;
  isHelper: boolean;
  list: string[];
}
export interface AvatarDecoration {
  id: string;
  name: string;
  file: string;
  url: string;
}
export interface Social {
  platform: string;
  url: string;
}
export interface BanInfo {
  isBanned: boolean;
  message: string | null;
  reason: string | null;
  bannedAt: string | null;
}
export type PublicStatus = 'active' | 'suspended';

/** Field order follows the contract's table, so documents read the way the contract does. */
export interface User {
  username: string;
  displayName: string;
  bio: string;
  avatarUrl: string;
  pageUrl: string;
  hasCustomDomain: boolean;
  customDomain: string | null;
  accountAgeDays: number;
  createdAt: string;
  views: number;
  badges: Badges;
  avatarDecoration: AvatarDecoration | null;
  socials: Social[];
  status: PublicStatus;
  banInfo: BanInfo;
}

/** A data problem in one row: its id and what is wrong, never a value of a private column. */
export interface RowWarning {
  id: number;
  reason: string;
}

export interface RenderContext {
  /** Absolute http(s) base URL without a trailing slash. */
  baseUrl: string;
  /** Snapshot time, ms since the epoch. */
  snapshotMs: number;
}

export type RenderResult =
  | { published: true; user: User; warnings: RowWarning[]; /** created_at, ms since the epoch */ createdMs: number }
  | { published: false; warnings: RowWarning[] };

/** Known badges, in the order `badges.list` holds them. */
const KNOWN_BADGES = ['official', 'verified', 'helper'] as const;

/** 1-64 of A-Z a-z 0-9 . _ -, not starting with a dot (docs/store.md). */
const PUBLISHABLE_USERNAME = /^(?!\.)[A-Za-z0-9._-]{1,64}$/;

export function isPublishableUsername(value: unknown): value is string {
  return typeof value === 'string' && PUBLISHABLE_USERNAME.test(value);
}

const PUBLIC_STATUS: Readonly<Record<string, PublicStatus>> = {
  active: 'active',
  suspended: 'suspended',
  banned: 'suspended',
};

export function renderUser(row: StoreRow, ctx: RenderContext): RenderResult {
  const columns = row.user;
  const id = columns[Col.id];
  const warnings: RowWarning[] = [];
  const warn = (reason: string) => warnings.push({ id, reason });
  const skip = (reason: string): RenderResult => {
    warn(`${reason}; not published`);
    return { published: false, warnings };
  };

  // Past 2^53 ids read back rounded, so two users can share one and the merge join would hand one
  // user's socials, badges and ban to another: never publish such a row.
  if (!Number.isSafeInteger(id)) return skip('id is beyond 2^53 and cannot be told apart from its neighbours');

  const rawStatus = columns[Col.status];
  const status = typeof rawStatus === 'string' ? PUBLIC_STATUS[rawStatus] : undefined;
  if (status === undefined) return skip(`status ${describeValue(rawStatus)} is not one of active, suspended, banned, inactive, deleted`);

  const username = columns[Col.username];
  if (!isPublishableUsername(username)) {
    return skip('username is not publishable (1-64 characters of A-Z a-z 0-9 . _ -, not starting with ".")');
  }

  const created = parseStoreDate(columns[Col.createdAt]);
  if (created === undefined) return skip('created_at is not a UTC date in a form the contract allows');

  const displayName = text(columns[Col.displayName], 'display_name', warn);
  const bio = text(columns[Col.bio], 'bio', warn);
  const customDomainRaw = columns[Col.customDomain];
  const customDomain = typeof customDomainRaw === 'string' && customDomainRaw.trim() !== '' ? customDomainRaw.trim() : null;
  if (customDomainRaw !== null && typeof customDomainRaw !== 'string') warn('custom_domain is not text; published as none');

  const user: User = {
    username,
    displayName,
    bio,
    avatarUrl: `${ctx.baseUrl}/api/avatar?u=${encodeURIComponent(username)}`,
    pageUrl: `${ctx.baseUrl}/p/${encodeURIComponent(username)}`,
    hasCustomDomain: customDomain !== null,
    customDomain,
    accountAgeDays: wholeDaysBetween(created.ms, ctx.snapshotMs),
    createdAt: created.iso,
    views: viewCount(columns[Col.views], warn),
    badges: badges(row.badges),
    avatarDecoration: decoration(columns[Col.decorationId], row.decoration, ctx.baseUrl, warn),
    socials: socials(row.socials, warn),
    status,
    banInfo: status === 'active' ? { isBanned: false, message: null, reason: null, bannedAt: null } : banInfo(row.ban, warn),
  };
  return { published: true, user, warnings, createdMs: created.ms };
}

function text(value: unknown, column: string, warn: (reason: string) => void): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) {
    warn(`${column} is NULL; published as an empty string`);
    return '';
  }
  warn(`${column} is not text; published as its text form`);
  return String(value);
}

function viewCount(value: unknown, warn: (reason: string) => void): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  warn('views is not a non-negative integer; published as 0');
  return 0;
}

function badges(held: readonly unknown[]): Badges {
  return {
    isVerified: held.includes('verified'),
    isOfficial: held.includes('official'),
    isHelper: held.includes('helper'),
    list: held.length === 0 ? [] : KNOWN_BADGES.filter((badge) => held.includes(badge)),
  };
}

function decoration(id: unknown, found: StoreRow['decoration'], baseUrl: string, warn: (reason: string) => void): AvatarDecoration | null {
  if (id === null) return null;
  if (found === undefined) {
    warn('decoration_id names no decorations row; avatarDecoration published as null');
    return null;
  }
  const [name, file] = found;
  if (typeof id !== 'string' || typeof name !== 'string' || typeof file !== 'string') {
    warn('decoration id, name or file is not text; avatarDecoration published as null');
    return null;
  }
  return { id, name, file, url: `${baseUrl}/api/decoration?f=${encodeURIComponent(file.toWellFormed())}` };
}

function socials(entries: StoreRow['socials'], warn: (reason: string) => void): Social[] {
  const published: Social[] = [];
  for (let index = 0; index < entries.length; index++) {
    const [platform, url] = entries[index]!;
    const position = index + 1;
    if (typeof platform !== 'string' || platform.trim() === '') {
      warn(`social link ${position} has no platform name; dropped`);
      continue;
    }
    const absolute = publicHttpUrl(url);
    if (absolute === undefined) {
      warn(`social link for ${describeValue(platform.trim().toLowerCase())} is not an absolute http(s) URL without credentials; dropped`);
      continue;
    }
    published.push({ platform: platform.trim().toLowerCase(), url: absolute });
  }
  return published;
}

/**
 * The URL in WHATWG serialisation when it is absolute http(s) with a host and no user:password
 * part (credentials in a public link would leak them); otherwise undefined.
 */
function publicHttpUrl(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.hostname === '' || url.username !== '' || url.password !== '') return undefined;
  return url.href;
}

function banInfo(ban: StoreRow['ban'], warn: (reason: string) => void): BanInfo {
  if (ban === undefined) {
    warn('suspended or banned user has no bans row; banInfo message, reason and bannedAt published as null');
    return { isBanned: true, message: null, reason: null, bannedAt: null };
  }
  const [message, reason, bannedAtRaw] = ban;
  const bannedAt = parseStoreDate(bannedAtRaw);
  if (bannedAt === undefined) warn('bans.banned_at is not a UTC date in a form the contract allows; bannedAt published as null');
  return {
    isBanned: true,
    message: nullableText(message),
    reason: nullableText(reason),
    bannedAt: bannedAt === undefined ? null : bannedAt.iso,
  };
}

function nullableText(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

/** A short, quoted, printable rendering of a public value for a warning (never a private column). */
function describeValue(value: unknown): string {
  if (typeof value !== 'string') return value === null ? 'NULL' : typeof value;
  const shown = value.length > 40 ? `${value.slice(0, 40)}…` : value;
  return JSON.stringify(shown);
}
