/**
 * Deterministic synthetic profile stores to the contract (data/schema.sql), with a realistic shape:
 * about 80% active, 8% suspended or banned, 12% inactive or deleted; 0-5 socials; a third decorated;
 * bios of 0-300 characters with Unicode; some custom domains and badges. The same seed and size give
 * the same store, so benchmarks and tests can rely on it.
 */
import Database from 'better-sqlite3';
import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { outputError, storeError } from '../core/errors.js';
import { DAY_MS } from '../core/time.js';

const SCHEMA_SQL = new URL('../../data/schema.sql', import.meta.url);

export interface SeedOptions {
  db: string;
  users: number;
  seed?: number;
  /** Replace an existing file (otherwise refuse, exit 5). */
  force?: boolean;
  onProgress?: (usersWritten: number) => void;
}

export interface SeedReport {
  db: string;
  users: number;
  socials: number;
  badges: number;
  bans: number;
  seconds: number;
}

/** mulberry32: tiny, fast, good enough for synthetic data, and identical on every platform. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = [
  'pixel',
  'nova',
  'luna',
  'river',
  'ember',
  'atlas',
  'echo',
  'maple',
  'orbit',
  'sable',
  'quill',
  'zephyr',
  'indigo',
  'cobalt',
  'fable',
  'lyric',
];
const BIO_PIECES = [
  'Streaming every Friday.',
  'Pixel artist 🎨',
  'Café owner ☕ and coder.',
  'Speedrunner — any%.',
  'Música y código 🎶',
  '東京在住のクリエイター',
  'Building in public 🚀',
  'Photographer 📷',
  '"Quotes" & <tags> too',
  'Line\nbreaks happen.',
];
const PLATFORMS = ['Discord', 'github', 'Twitch', 'youtube', 'Steam', 'twitter', 'GitLab', 'instagram'];
const DECORATIONS: [string, string, string][] = [
  ['halo_gold', 'Golden Halo', 'halo_gold.png'],
  ['flame', 'Flame Ring', 'flame ring.png'],
  ['stars', 'Stars & Moon', 'stars&moon.png'],
  ['frost', 'Frost', 'frost.png'],
  ['neon', 'Neon Glow', 'neon_glow.png'],
];

export function seedStore(options: SeedOptions): SeedReport {
  const started = performance.now();
  const { db: file, users } = options;
  if (!Number.isSafeInteger(users) || users < 0) throw new Error(`bug: users must be a non-negative integer, not ${users}`);
  if (existsSync(file) && !options.force) {
    throw outputError(`refusing to overwrite ${file}`, 'pass --force to replace it, or choose another --db');
  }
  const temporary = `${file}.seeding`;
  const db = createScratchStore(temporary);
  const counts = { socials: 0, badges: 0, bans: 0 };
  try {
    const writer = new SyntheticRows(db, prng(options.seed ?? 1), counts);
    const fill = db.transaction((from: number, to: number) => {
      for (let id = from; id <= to; id++) writer.user(id);
    });
    for (const d of DECORATIONS) writer.decoration(d);
    for (let from = 1; from <= users; from += BATCH) {
      fill(from, Math.min(users, from + BATCH - 1));
      options.onProgress?.(Math.min(users, from + BATCH - 1));
    }
    db.close();
  } catch (error) {
    if (db.open) db.close();
    rmSync(temporary, { force: true });
    throw error;
  }
  renameSync(temporary, file);
  return { db: file, users, ...counts, seconds: (performance.now() - started) / 1000 };
}

/** Users written per transaction. */
const BATCH = 50_000;

/** A throwaway file with the contract's schema: no journal, no fsync; the rename publishes it whole. */
function createScratchStore(temporary: string): Database.Database {
  rmSync(temporary, { force: true });
  let db: Database.Database;
  try {
    db = new Database(temporary);
  } catch (cause) {
    throw storeError(`cannot create ${temporary}`, 'check that its folder exists and is writable', cause);
  }
  try {
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.pragma('foreign_keys = OFF');
    db.exec(readFileSync(SCHEMA_SQL, 'utf8'));
  } catch (error) {
    db.close();
    rmSync(temporary, { force: true });
    throw error;
  }
  return db;
}

const EPOCH_2015 = Date.UTC(2015, 0, 1);
const CREATED_SPAN = Date.UTC(2026, 0, 1) - EPOCH_2015;

/**
 * One user's rows at a time, drawn from one seeded generator. The draws happen in a fixed order
 * (user columns, socials, badges, ban), so a seed always gives the same store.
 */
class SyntheticRows {
  private readonly insertUser: Database.Statement;
  private readonly insertSocial: Database.Statement;
  private readonly insertBadge: Database.Statement;
  private readonly insertBan: Database.Statement;
  private readonly insertDecoration: Database.Statement;
  private socialId = 0;

  constructor(
    db: Database.Database,
    private readonly random: () => number,
    private readonly counts: { socials: number; badges: number; bans: number },
  ) {
    this.insertUser =
      db.prepare(`INSERT INTO users (id, username, display_name, bio, custom_domain, created_at, views, status, decoration_id, email, password_hash, last_login_ip)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.insertSocial = db.prepare('INSERT INTO socials (id, user_id, platform, url, position) VALUES (?, ?, ?, ?, ?)');
    this.insertBadge = db.prepare('INSERT INTO badges (user_id, badge) VALUES (?, ?)');
    this.insertBan = db.prepare('INSERT INTO bans (user_id, message, reason, banned_at) VALUES (?, ?, ?, ?)');
    this.insertDecoration = db.prepare('INSERT INTO decorations (id, name, file) VALUES (?, ?, ?)');
  }

  private pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.random() * list.length)]!;
  }

  decoration(row: readonly [string, string, string]): void {
    this.insertDecoration.run(...row);
  }

  user(id: number): void {
    const { username, status, created } = this.userRow(id);
    this.socials(id, username);
    this.badges(id);
    if (status === 'suspended' || status === 'banned') {
      this.insertBan.run(
        id,
        'This account is suspended.',
        this.pick(['spam', 'harassment', 'impersonation']),
        new Date(created.getTime() + DAY_MS).toISOString(),
      );
      this.counts.bans++;
    }
  }

  private userRow(id: number): { username: string; status: string; created: Date } {
    const { random } = this;
    const word = this.pick(WORDS);
    // Unique by construction (the id, in base 36), with mixed letter case and the allowed punctuation.
    const username = `${random() < 0.3 ? word[0]!.toUpperCase() + word.slice(1) : word}${this.pick(['', '.', '_', '-'])}${id.toString(36)}`;
    const roll = random();
    const status = roll < 0.8 ? 'active' : roll < 0.84 ? 'suspended' : roll < 0.88 ? 'banned' : roll < 0.94 ? 'inactive' : 'deleted';
    const bio = this.bio();
    const created = new Date(EPOCH_2015 + Math.floor(random() * CREATED_SPAN));
    const createdAt = random() < 0.5 ? created.toISOString().slice(0, 19).replace('T', ' ') : created.toISOString();
    this.insertUser.run(
      id,
      username,
      `${word} ${id}`,
      bio,
      random() < 0.1 ? `${username.toLowerCase()}.example.com` : null,
      createdAt,
      Math.floor(random() * 1_000_000),
      status,
      random() < 1 / 3 ? this.pick(DECORATIONS)[0] : null,
      `user${id}@mail.private.invalid`,
      `$argon2id$v=19$PRIVATE${id}`,
      `10.${id % 256}.${(id >> 8) % 256}.1`,
    );
    return { username, status, created };
  }

  /** 0-300 characters of bio pieces (emoji, other scripts, quotes, line breaks), cut by code point. */
  private bio(): string {
    let bio = '';
    const bioLength = Math.floor(this.random() * 301);
    while (bio.length < bioLength) bio += `${this.pick(BIO_PIECES)} `;
    return [...bio].slice(0, bioLength).join('');
  }

  private socials(id: number, username: string): void {
    const socialCount = Math.floor(this.random() * 6);
    for (let p = 0; p < socialCount; p++) {
      const platform = PLATFORMS[(id + p) % PLATFORMS.length]!;
      this.insertSocial.run(
        ++this.socialId,
        id,
        platform,
        `https://${platform.toLowerCase()}.example/${username}`,
        Math.floor(this.random() * 4),
      );
      this.counts.socials++;
    }
  }

  private badges(id: number): void {
    for (const badge of ['official', 'verified', 'helper'] as const) {
      if (this.random() < (badge === 'official' ? 0.02 : badge === 'verified' ? 0.1 : 0.05)) {
        this.insertBadge.run(id, badge);
        this.counts.badges++;
      }
    }
  }
}
