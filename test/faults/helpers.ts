/**
 * Helpers for the fault-injection tests: the real CLI in a child process, optionally with the
 * fault-injecting preload (fixtures/inject.mjs), real SQLite stores in temp folders, and the checks
 * that a tree is still exactly what it was.
 */
import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli, type CliResult } from '../helpers/process.js';
import { listFiles, publishedFiles } from '../helpers/output.js';
import { TestStore, tempDir as sharedTempDir, userName } from '../helpers/store.js';

export const INJECT = fileURLToPath(new URL('./fixtures/inject.mjs', import.meta.url));
export const BASE = 'https://p.example.com';
/** A fixed snapshot time, so a reference build can match byte for byte. */
export const EPOCH = '1767225600';

export type Run = CliResult;

/** The real bin at the fixed snapshot time; with `faults`, under the injecting preload (FAULT_* variables, see inject.mjs). */
export function cli(args: string[], faults?: Record<string, string>, env: Record<string, string> = {}, timeoutMs = 60_000): Run {
  return runCli(args, { env: { SOURCE_DATE_EPOCH: EPOCH, ...env, ...faults }, nodeArgs: faults ? ['--import', INJECT] : [], timeoutMs });
}

export const buildArgs = (db: string, out: string, ...more: string[]) => ['build', '--db', db, '--out', out, '--base-url', BASE, ...more];

/** A temp folder for one test (the shared helper, named for this suite). */
export const tempDir = () => sharedTempDir('ps-faults-');

/** Every file of the tree (bookkeeping included) with its bytes. */
export function treeBytes(out: string): Map<string, string> {
  return new Map(listFiles(out).map((f) => [f, readFileSync(join(out, f), 'latin1')]));
}

/** The published files with their bytes (what a CDN would serve). */
export function servedBytes(out: string): Map<string, string> {
  return new Map(publishedFiles(out).map((f) => [f, readFileSync(join(out, f), 'latin1')]));
}

/** A failure that explains itself: one "error:" line with the cause, a hint, no stack trace. */
export function expectClearError(stderr: string, cause: RegExp): string[] {
  const problems: string[] = [];
  if (!cause.test(stderr)) problems.push(`stderr does not name the cause ${cause}: ${stderr}`);
  if (/^\s+at /m.test(stderr)) problems.push(`stderr has a stack trace: ${stderr}`);
  if (/internal error/i.test(stderr)) problems.push(`reported as a bug: ${stderr}`);
  if (!/Fix: /.test(stderr)) problems.push(`no hint: ${stderr}`);
  return problems;
}

/**
 * A contract-schema store of `users` users (every one active, every fifth suspended with a ban),
 * bios of `bioBytes` each; `journal` is the platform's WAL or SQLite's default rollback journal.
 */
export function makeStore(
  file: string,
  users: number,
  options: { bioBytes?: number; journal?: 'wal' | 'delete'; views?: number } = {},
): void {
  const store = new TestStore(file);
  store.db.pragma(`journal_mode = ${options.journal ?? 'wal'}`);
  const bio = 'b'.repeat(options.bioBytes ?? 40);
  store.users(users, (id) => ({
    user: {
      username: userName(id),
      display_name: `User ${id}`,
      bio,
      created_at: '2024-01-01 00:00:00',
      views: options.views ?? id,
      status: id % 5 === 0 ? 'suspended' : 'active',
      email: 'someone@mail.invalid',
      password_hash: 'HASH-secret',
      last_login_ip: '10.0.0.1',
    },
    ban: id % 5 === 0 ? ['Suspended', 'spam', '2025-01-01 00:00:00'] : undefined,
    socials: [['GitHub', `https://github.com/u${id}`, 1]],
  }));
  store.close();
}

/** Changes the store so that a build has work: views change, some users go, one arrives. */
export function changeStore(file: string, round = 1): void {
  const db = new Database(file);
  db.prepare('UPDATE users SET views = views + ?').run(round);
  db.prepare("UPDATE users SET status = 'deleted' WHERE id % 7 = ?").run(round % 7);
  db.prepare(
    `INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (?, ?, 'New', '', '2025-06-01 00:00:00', 1, 'active')`,
  ).run(100_000 + round, `newcomer${round}`);
  db.close();
}
