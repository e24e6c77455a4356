/**
 * What the contract says a build of a store must publish, computed independently of the product: the
 * rows are read back from the SQLite file (so SQLite's own conversions count), dates are judged by
 * the generator's labels, and every rule is restated from docs/store.md. `checkBuild` returns
 * every difference between a built tree and that expectation.
 */
import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BuildReport } from '../../src/build.js';
import { listFiles, publishedFiles } from '../helpers/output.js';
import { validateTree } from '../helpers/schemas.js';
import type { LabelledDate, ModelStore } from './model.js';

export const BASE = 'https://profiles.example.com';
const DAY = 86_400_000;
const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);
/** docs/store.md: 1 to 64 characters of A-Z a-z 0-9 . _ -, not starting with a dot. */
const NAME = /^[A-Za-z0-9._-]{1,64}$/;
const publishable = (name: unknown): name is string => typeof name === 'string' && NAME.test(name) && !name.startsWith('.');

interface StoredUser {
  id: bigint;
  username: unknown;
  display_name: unknown;
  bio: unknown;
  custom_domain: unknown;
  created_at: unknown;
  views: unknown;
  status: unknown;
  decoration_id: unknown;
}

export interface Expectation {
  /** lower-case name -> the stored row published there */
  published: Map<string, StoredUser>;
  /** ids (as the report gives them) of rows with a publishable status that are not published */
  skippedIds: Set<number>;
  check: (out: string, report: BuildReport, snapshotMs: number, nonce: string) => string[];
}

type Badge = { user_id: bigint; badge: unknown };
type Social = { user_id: bigint; platform: unknown; url: unknown };
type Ban = { user_id: bigint; message: unknown; reason: unknown; banned_at: unknown };
type Decoration = { id: unknown; name: unknown; file: unknown };

/** Every row the oracle reads, as SQLite hands it back (64-bit integers as bigint). */
interface StoredRows {
  users: StoredUser[];
  badges: Badge[];
  socials: Social[];
  bans: Ban[];
  decorations: Decoration[];
}

/** The generator's own reading of each user's dates, by id. */
type Labels = Map<string, { created: LabelledDate; banned: LabelledDate | undefined }>;

/** What the oracle knows while it checks one tree. */
interface Oracle {
  rows: StoredRows;
  labels: Labels;
  published: Map<string, StoredUser>;
  skippedIds: Set<number>;
}

type Fail = (what: string) => void;

export function expectation(dbFile: string, model: ModelStore): Expectation {
  const rows = readStore(dbFile);
  const labels: Labels = new Map();
  for (const u of model.users) labels.set(String(u.id), { created: u.created_at, banned: u.ban?.banned_at });
  const { published, skippedIds } = whoIsPublished(rows.users, labels);
  const oracle: Oracle = { rows, labels, published, skippedIds };
  const check = (out: string, report: BuildReport, snapshotMs: number, nonce: string): string[] =>
    checkBuild(oracle, out, report, snapshotMs, nonce);
  return { published, skippedIds, check };
}

function readStore(dbFile: string): StoredRows {
  const db = new Database(dbFile, { readonly: true });
  db.defaultSafeIntegers(true);
  try {
    return {
      users: db
        .prepare('SELECT id, username, display_name, bio, custom_domain, created_at, views, status, decoration_id FROM users ORDER BY id')
        .all() as StoredUser[],
      badges: db.prepare('SELECT user_id, badge FROM badges').all() as Badge[],
      socials: db.prepare('SELECT user_id, platform, url FROM socials ORDER BY user_id, position, id').all() as Social[],
      bans: db.prepare('SELECT user_id, message, reason, banned_at FROM bans').all() as Ban[],
      decorations: db.prepare('SELECT id, name, file FROM decorations').all() as Decoration[],
    };
  } finally {
    db.close();
  }
}

/** Lower-case name -> the row published there, and the ids of rows that must be skipped with a warning. */
function whoIsPublished(users: StoredUser[], labels: Labels): Pick<Oracle, 'published' | 'skippedIds'> {
  const published = new Map<string, StoredUser>();
  const skippedIds = new Set<number>();
  for (const u of users) {
    const eligible = u.status === 'active' || u.status === 'suspended' || u.status === 'banned';
    if (!eligible) {
      if (u.status !== 'inactive' && u.status !== 'deleted') skippedIds.add(Number(u.id)); // unknown status: a warning
      continue;
    }
    // Ids past 2^53 cannot be told apart once read into JavaScript: such rows are skipped with a warning.
    const exactId = u.id >= -MAX_EXACT && u.id <= MAX_EXACT;
    const ok = exactId && publishable(u.username) && labels.get(String(u.id))!.created.iso !== null;
    const name = ok ? (u.username as string).toLowerCase() : '';
    if (!ok || published.has(name)) skippedIds.add(Number(u.id));
    else published.set(name, u);
  }
  return { published, skippedIds };
}

/** Every difference between a built tree (and its report) and what the store says it must hold. */
function checkBuild(oracle: Oracle, out: string, report: BuildReport, snapshotMs: number, nonce: string): string[] {
  const problems: string[] = [];
  const fail: Fail = (what) => problems.push(what);
  checkFiles(out, oracle.published, fail);
  if (problems.length > 0) return problems;
  problems.push(...validateTree(out));

  const warnedIds = new Set(report.warnings.map((w) => w.id));
  for (const id of oracle.skippedIds) if (!warnedIds.has(id)) fail(`row ${id} not published without a warning`);
  if (report.profiles !== oracle.published.size) fail(`report.profiles ${report.profiles}, expected ${oracle.published.size}`);

  const creators: string[] = [];
  const documents = new Map<string, any>();
  for (const [name, u] of oracle.published) {
    const { data, active } = checkProfile(oracle, out, name, u, report, snapshotMs, fail);
    documents.set(name, data);
    if (active) creators.push(name);
  }
  checkCreators(out, creators, documents, fail);

  // No private value anywhere: files (bookkeeping included), the report and the log lines.
  for (const f of listFiles(out)) if (readFileSync(join(out, f), 'latin1').includes(nonce)) fail(`private value in ${f}`);
  if (JSON.stringify(report).includes(nonce)) fail('private value in the report');
  return problems;
}

/** Exactly the expected files, and the bookkeeping folder holds only the manifest and the pass's record. */
function checkFiles(out: string, published: Map<string, StoredUser>, fail: Fail): void {
  const files = publishedFiles(out);
  const expectedFiles = new Set(['service-api/v1/creators', 'service-api/v1/.creators.gz', 'api/v1/openapi.json']);
  for (const name of published.keys()) for (const dir of ['api/v1/users', 'service-api/v1/users']) expectedFiles.add(`${dir}/${name}`);
  for (const f of files) if (!expectedFiles.has(f) && !/^_errors\/[a-z-]+\.json$/.test(f)) fail(`unexpected file ${JSON.stringify(f)}`);
  for (const f of expectedFiles) if (!files.includes(f)) fail(`missing file ${f}`);
  const bookkeeping = listFiles(out).filter((f) => f.startsWith('.profile-snapshot/'));
  const kept = ['.profile-snapshot/creators-gzip-index', '.profile-snapshot/last-pass.json', '.profile-snapshot/manifest'];
  if (bookkeeping.join() !== kept.join()) fail(`bookkeeping left: ${bookkeeping.join(', ')}`);
}

/** One profile under both aliases, field by field; its data, and whether it belongs in the creators list. */
function checkProfile(
  oracle: Oracle,
  out: string,
  name: string,
  u: StoredUser,
  report: BuildReport,
  snapshotMs: number,
  fail: Fail,
): { data: any; active: boolean } {
  const bytes = readFileSync(join(out, 'api/v1/users', name), 'utf8');
  if (readFileSync(join(out, 'service-api/v1/users', name), 'utf8') !== bytes) fail(`${name}: aliases differ`);
  const d = JSON.parse(bytes).data;
  const label = oracle.labels.get(String(u.id))!;
  const want = scalarFields(u, d, label, snapshotMs);
  for (const [field, value] of Object.entries(want)) {
    if (d[field] !== value)
      fail(`${name}.${field}: ${JSON.stringify(d[field])?.slice(0, 80)}, expected ${JSON.stringify(value)?.slice(0, 80)}`);
  }
  if (d.hasCustomDomain !== (want.customDomain !== null)) fail(`${name}.hasCustomDomain`);
  checkBadges(oracle.rows.badges, name, u, d, fail);
  checkDecoration(oracle.rows.decorations, name, u, d, fail);
  checkSocials(oracle.rows.socials, name, u, d, report, fail);
  checkBan(oracle.rows.bans, name, u, d, want.status === 'active', label, fail);
  return { data: d, active: want.status === 'active' };
}

/** The User fields that are one value each, as the store mapping says (`d` for what the contract leaves open). */
function scalarFields(u: StoredUser, d: any, label: { created: LabelledDate }, snapshotMs: number): Record<string, unknown> {
  return {
    username: u.username,
    displayName: typeof u.display_name === 'string' ? u.display_name : d.displayName,
    bio: typeof u.bio === 'string' ? u.bio : d.bio,
    avatarUrl: `${BASE}/api/avatar?u=${encodeURIComponent(u.username as string)}`,
    pageUrl: `${BASE}/p/${encodeURIComponent(u.username as string)}`,
    customDomain: typeof u.custom_domain === 'string' && u.custom_domain.trim() !== '' ? u.custom_domain.trim() : null,
    createdAt: label.created.iso,
    accountAgeDays: Math.max(0, Math.floor((snapshotMs - Date.parse(label.created.iso!)) / DAY)),
    views: typeof u.views === 'bigint' && u.views >= 0n && u.views <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(u.views) : 0,
    status: u.status === 'active' ? 'active' : 'suspended',
  };
}

function checkBadges(badges: Badge[], name: string, u: StoredUser, d: any, fail: Fail): void {
  const held = badges.filter((b) => b.user_id === u.id).map((b) => b.badge);
  const list = ['official', 'verified', 'helper'].filter((b) => held.includes(b));
  if (
    JSON.stringify(d.badges) !==
    JSON.stringify({
      isVerified: held.includes('verified'),
      isOfficial: held.includes('official'),
      isHelper: held.includes('helper'),
      list,
    })
  ) {
    fail(`${name}.badges ${JSON.stringify(d.badges)}`);
  }
}

function checkDecoration(decorations: Decoration[], name: string, u: StoredUser, d: any, fail: Fail): void {
  const decoration = u.decoration_id === null ? undefined : decorations.find((x) => x.id === u.decoration_id);
  const wantDecoration =
    decoration === undefined
      ? null
      : {
          id: decoration.id,
          name: decoration.name,
          file: decoration.file,
          url: `${BASE}/api/decoration?f=${encodeURIComponent(decoration.file as string)}`,
        };
  if (JSON.stringify(d.avatarDecoration) !== JSON.stringify(wantDecoration))
    fail(`${name}.avatarDecoration ${JSON.stringify(d.avatarDecoration)?.slice(0, 80)}`);
}

function checkSocials(socials: Social[], name: string, u: StoredUser, d: any, report: BuildReport, fail: Fail): void {
  const rows = socials.filter((s) => s.user_id === u.id);
  const dropped = report.warnings.filter((w) => w.id === Number(u.id) && /^social link/.test(w.reason)).length;
  // The contract's rule restated: rows in position-then-id order (the query above), platform
  // trimmed and lower-cased, only absolute http(s) URLs with a host and no credentials, in WHATWG form.
  const wantSocials = rows.flatMap((r) => {
    if (typeof r.platform !== 'string' || r.platform.trim() === '' || typeof r.url !== 'string') return [];
    let url: URL;
    try {
      url = new URL(r.url.trim());
    } catch {
      return [];
    }
    if (!['http:', 'https:'].includes(url.protocol) || url.hostname === '' || url.username !== '' || url.password !== '') return [];
    return [{ platform: r.platform.trim().toLowerCase(), url: url.href }];
  });
  if (JSON.stringify(d.socials) !== JSON.stringify(wantSocials))
    fail(`${name}.socials ${JSON.stringify(d.socials).slice(0, 120)}, want ${JSON.stringify(wantSocials).slice(0, 120)}`);
  if (rows.length - wantSocials.length !== dropped)
    fail(`${name}: ${rows.length} socials, ${wantSocials.length} publishable, ${dropped} dropped with a warning`);
}

function checkBan(
  bans: Ban[],
  name: string,
  u: StoredUser,
  d: any,
  active: boolean,
  label: { banned: LabelledDate | undefined },
  fail: Fail,
): void {
  const ban = bans.find((b) => b.user_id === u.id);
  const wantBan = active
    ? { isBanned: false, message: null, reason: null, bannedAt: null }
    : ban === undefined
      ? { isBanned: true, message: null, reason: null, bannedAt: null }
      : {
          isBanned: true,
          message: ban.message === null ? null : String(ban.message),
          reason: ban.reason === null ? null : String(ban.reason),
          bannedAt: label.banned?.iso ?? null,
        };
  if (JSON.stringify(d.banInfo) !== JSON.stringify(wantBan)) fail(`${name}.banInfo ${JSON.stringify(d.banInfo)?.slice(0, 100)}`);
}

/** The creators list: the active profiles in name order, each member equal to its profile's data. */
function checkCreators(out: string, creators: string[], documents: Map<string, any>, fail: Fail): void {
  const list = JSON.parse(readFileSync(join(out, 'service-api/v1/creators'), 'utf8'));
  const order = creators.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const got = list.data.map((x: any) => x.username.toLowerCase());
  if (JSON.stringify(got) !== JSON.stringify(order))
    fail(`creators ${JSON.stringify(got).slice(0, 200)}, expected ${JSON.stringify(order).slice(0, 200)}`);
  else
    list.data.forEach((x: any, i: number) => {
      if (JSON.stringify(x) !== JSON.stringify(documents.get(order[i]!))) fail(`creators[${i}] differs from its profile`);
    });
}
