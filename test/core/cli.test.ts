/**
 * The real bin in a child process: every exit code, option precedence, the report, and that every
 * failure leaves the previous output exactly as it was.
 */
import Database from 'better-sqlite3';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/process.js';
import { listFiles, snapshotTree } from '../helpers/output.js';
import { eachTestWorkspace, execSql, sampleStore, TestStore, type Workspace } from '../helpers/store.js';

let dir: Workspace['dir'];
let db: string;
let out: string;
const EPOCH = { SOURCE_DATE_EPOCH: '1767225600' };
eachTestWorkspace((w) => ({ dir, db, out } = w), { fill: sampleStore });

const build = (args: string[] = [], env: Record<string, string> = EPOCH) => runCli(['build', '--db', db, '--out', out, ...args], { env });

/** Builds a good output, runs `failing`, and checks the output did not change at all. */
function expectOutputUntouched(failing: () => void) {
  expect(build().code).toBe(0);
  const before = snapshotTree(out);
  failing();
  expect(snapshotTree(out)).toEqual(before);
  expect(listFiles(out).filter((f) => f.includes('staging/'))).toEqual([]);
}

const oneErrorLine = (stderr: string) => {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^profile-snapshot: .+\. Fix: .+\.$/);
  return lines[0]!;
};

describe('exit 0', () => {
  it('builds the sample store with warnings and prints one summary line', () => {
    const result = build();
    expect(result.code).toBe(0);
    const summary = result.stderr.trim().split('\n').at(-1)!;
    expect(summary).toBe(
      'profile-snapshot: 18 profiles published (14 creators), 6 skipped; files 43 written, 0 unchanged, 0 removed; 12 warnings; ' +
        summary.split('; ').at(-1),
    );
    expect(summary).toMatch(/; \d+\.\d\d s$/);
    expect(result.stdout).toBe('');
  });

  it('--json prints the report with every warning on stdout', () => {
    const result = build(['--json']);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({
      profiles: 18,
      creators: 14,
      skipped: 6,
      files: { written: 43, unchanged: 0, removed: 0 },
      snapshotTime: '2026-01-01T00:00:00.000Z',
    });
    expect(report.warnings).toHaveLength(12);
    expect(report.warnings[0]).toEqual({ id: expect.any(Number), reason: expect.any(String) });
    expect(typeof report.seconds).toBe('number');
  });

  it('--help explains every option with its environment variable and default', () => {
    const result = runCli(['build', '--help']);
    expect(result.code).toBe(0);
    for (const text of [
      '--db <file>',
      'PROFILE_DB',
      'data/profiles.db',
      '--out <dir>',
      'PROFILE_OUT',
      '"dist"',
      '--base-url <url>',
      'BASE_URL',
      "then Netlify's URL",
      'http://localhost:3000',
      '--strict',
      '--json',
      '--full',
      'SOURCE_DATE_EPOCH',
      'Exit codes',
    ]) {
      expect(result.stdout).toContain(text);
    }
  });
});

describe('option precedence: flag, then environment, then default', () => {
  it('reads PROFILE_DB, PROFILE_OUT and BASE_URL from the environment', () => {
    const result = runCli(['build'], { env: { ...EPOCH, PROFILE_DB: db, PROFILE_OUT: out, BASE_URL: 'https://env.example' } });
    expect(result.code).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'api/v1/users/bob'), 'utf8')).data.avatarUrl).toBe('https://env.example/api/avatar?u=bob');
  });

  it("falls back to Netlify's URL when BASE_URL is unset, and flags beat both", () => {
    expect(runCli(['build', '--db', db, '--out', out], { env: { ...EPOCH, URL: 'https://netlify.example' } }).code).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'api/v1/users/bob'), 'utf8')).data.pageUrl).toBe('https://netlify.example/p/bob');
    // BASE_URL beats Netlify's URL.
    expect(
      runCli(['build', '--db', db, '--out', out], { env: { ...EPOCH, URL: 'https://netlify.example', BASE_URL: 'https://env.example' } })
        .code,
    ).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'api/v1/users/bob'), 'utf8')).data.pageUrl).toBe('https://env.example/p/bob');
    // Flags beat every variable: a PROFILE_DB that does not exist and a PROFILE_OUT elsewhere are ignored.
    expect(
      runCli(['build', '--db', db, '--out', out, '--base-url', 'https://flag.example'], {
        env: {
          ...EPOCH,
          URL: 'https://netlify.example',
          BASE_URL: 'https://env.example',
          PROFILE_DB: join(dir.path, 'nope.db'),
          PROFILE_OUT: join(dir.path, 'elsewhere'),
        },
      }).code,
    ).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'api/v1/users/bob'), 'utf8')).data.pageUrl).toBe('https://flag.example/p/bob');
    expect(existsSync(join(dir.path, 'elsewhere'))).toBe(false);
  });

  it('warns on stderr when a users folder passes 50,000 profiles (Netlify refuses a folder of over 54,000 files)', () => {
    execSql(
      db,
      `DELETE FROM socials; DELETE FROM badges; DELETE FROM bans; DELETE FROM users;
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50001)
      INSERT INTO users (id, username, display_name, bio, created_at, views, status) SELECT i, 'u' || i, '', '', '2020-01-01 00:00:00', 0, 'active' FROM n;`,
    );
    const over = build();
    expect(over.code).toBe(0);
    expect(over.stderr).toMatch(
      /^warning: api\/v1\/users holds 50,001 profiles: Netlify refuses a deploy with more than 54,000 files in one folder/m,
    );
    expect(over.stderr).toMatch(/^warning: service-api\/v1\/users holds 50,001 profiles/m);
    // 50,000 exactly is not past the threshold.
    execSql(db, 'DELETE FROM users WHERE id = 50001');
    const at = build();
    expect(at.code).toBe(0);
    expect(at.stderr).not.toContain('warning:');
  }, 120_000);

  it('defaults to data/profiles.db, dist and http://localhost:3000 relative to the working directory', () => {
    const cwd = join(dir.path, 'project');
    mkdirSync(join(cwd, 'data'), { recursive: true });
    TestStore.sample(join(cwd, 'data/profiles.db')).close();
    expect(runCli(['build'], { cwd, env: EPOCH }).code).toBe(0);
    expect(JSON.parse(readFileSync(join(cwd, 'dist/api/v1/users/bob'), 'utf8')).data.avatarUrl).toBe(
      'http://localhost:3000/api/avatar?u=bob',
    );
  });
});

describe('exit 2: usage errors', () => {
  it('rejects an unknown flag', () => {
    const result = build(['--frobnicate']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("unknown option '--frobnicate'");
    expect(existsSync(out)).toBe(false);
  });

  it.each([
    ['relative/path'],
    ['ftp://example.com'],
    ['https://example.com/?x=1'],
    ['https://example.com/#top'],
    ['https://u:p@example.com'],
    ['example.com'],
  ])('rejects the base URL %j', (url) => {
    expectOutputUntouched(() => {
      const result = build(['--base-url', url]);
      expect(result.code).toBe(2);
      expect(oneErrorLine(result.stderr)).toContain('--base-url');
    });
  });

  it('names the environment variable a bad base URL came from', () => {
    const result = runCli(['build', '--db', db, '--out', out], { env: { BASE_URL: 'nope' } });
    expect(result.code).toBe(2);
    expect(oneErrorLine(result.stderr)).toContain('BASE_URL is not an absolute URL');
  });

  it('rejects a SOURCE_DATE_EPOCH that is not whole seconds', () => {
    const result = build([], { SOURCE_DATE_EPOCH: 'yesterday' });
    expect(result.code).toBe(2);
    expect(oneErrorLine(result.stderr)).toContain('SOURCE_DATE_EPOCH');
  });
});

describe('exit 3: store unusable', () => {
  it('a missing store file (the CLI never invents one)', () => {
    expectOutputUntouched(() => {
      const result = runCli(['build', '--db', join(dir.path, 'nope.db'), '--out', out]);
      expect(result.code).toBe(3);
      expect(oneErrorLine(result.stderr)).toContain(`profile store not found: ${join(dir.path, 'nope.db')}`);
      expect(existsSync(join(dir.path, 'nope.db'))).toBe(false);
    });
  });

  it('a folder instead of a file', () => {
    const result = runCli(['build', '--db', dir.path, '--out', out]);
    expect(result.code).toBe(3);
    expect(oneErrorLine(result.stderr)).toContain('not a file');
  });

  it('a file that is not SQLite', () => {
    expectOutputUntouched(() => {
      const fake = join(dir.path, 'fake.db');
      writeFileSync(fake, 'this is not a database, just text that is long enough to have a header\n'.repeat(20));
      const result = runCli(['build', '--db', fake, '--out', out]);
      expect(result.code).toBe(3);
      expect(oneErrorLine(result.stderr)).toContain(`not a SQLite database: ${fake}`);
    });
  });

  it('schema drift: names the missing column', () => {
    expectOutputUntouched(() => {
      execSql(db, 'ALTER TABLE users DROP COLUMN bio');
      const result = build();
      expect(result.code).toBe(3);
      expect(oneErrorLine(result.stderr)).toContain('missing column "users.bio"');
    });
  });

  it('schema drift: names the missing table', () => {
    execSql(db, 'DROP TABLE bans');
    const result = build();
    expect(result.code).toBe(3);
    expect(oneErrorLine(result.stderr)).toContain('missing table "bans"');
  });

  it('a store locked by another process past the busy timeout', () => {
    expectOutputUntouched(() => {
      const writer = new Database(db);
      writer.pragma('journal_mode = DELETE');
      writer.exec('BEGIN EXCLUSIVE');
      try {
        const result = build(['--busy-timeout', '200']);
        expect(result.code).toBe(3);
        expect(oneErrorLine(result.stderr)).toContain('locked by another process');
      } finally {
        writer.exec('ROLLBACK');
        writer.close();
      }
    });
  });

  it('never changes the store', () => {
    const before = readFileSync(db);
    expect(build().code).toBe(0);
    expect(readFileSync(db).equals(before)).toBe(true);
  });
});

describe('exit 4: warnings under --strict', () => {
  it('writes nothing and lists the warnings', () => {
    expectOutputUntouched(() => {
      execSql(db, "UPDATE users SET views = views + 1 WHERE username = 'Alice'");
      const result = build(['--strict']);
      expect(result.code).toBe(4);
      expect(result.stderr).toContain('warning: users.id 13: social link');
      expect(result.stderr).toMatch(/profile-snapshot: 12 data warnings under --strict; nothing was written\. Fix: .+\.\n$/);
    });
  });

  it('writes nothing into a fresh out dir either', () => {
    expect(build(['--strict']).code).toBe(4);
    expect(listFiles(out).filter((f) => !f.startsWith('.profile-snapshot/'))).toEqual([]);
  });

  it('--strict --json reports the warnings as JSON', () => {
    const result = build(['--strict', '--json']);
    expect(result.code).toBe(4);
    const report = JSON.parse(result.stdout);
    expect(report.error).toMatchObject({ kind: 'strictWarnings', exitCode: 4 });
    expect(report.warnings).toHaveLength(12);
  });

  it('passes --strict on a clean store', () => {
    const clean = join(dir.path, 'clean.db');
    new TestStore(clean).user({ id: 1, username: 'fine' }).close();
    expect(runCli(['build', '--db', clean, '--out', out, '--strict'], { env: EPOCH }).code).toBe(0);
  });
});

describe('exit 5: output unusable', () => {
  it('the out path is a file', () => {
    const file = join(dir.path, 'file');
    writeFileSync(file, 'keep me');
    const result = runCli(['build', '--db', db, '--out', file]);
    expect(result.code).toBe(5);
    expect(oneErrorLine(result.stderr)).toContain('is not a folder');
    expect(readFileSync(file, 'utf8')).toBe('keep me');
  });

  it('the out path is under a file', () => {
    const file = join(dir.path, 'file');
    writeFileSync(file, 'keep me');
    const result = runCli(['build', '--db', db, '--out', join(file, 'dist')]);
    expect(result.code).toBe(5);
    oneErrorLine(result.stderr);
  });

  it('writing would overwrite a file the tool did not write', () => {
    mkdirSync(join(out, 'api/v1/users'), { recursive: true });
    writeFileSync(join(out, 'api/v1/users/alice'), 'hand-made');
    const result = build();
    expect(result.code).toBe(5);
    expect(oneErrorLine(result.stderr)).toContain(`refusing to overwrite ${join(out, 'api/v1/users/alice')}`);
    expect(readFileSync(join(out, 'api/v1/users/alice'), 'utf8')).toBe('hand-made');
    expect(listFiles(out).filter((f) => !f.startsWith('.profile-snapshot/'))).toEqual(['api/v1/users/alice']);
  });

  it('a foreign file where a new profile would go, after earlier good builds', () => {
    expect(build().code).toBe(0);
    writeFileSync(join(out, 'api/v1/users/newbie'), 'hand-made');
    execSql(
      db,
      "INSERT INTO users (id, username, display_name, bio, created_at, status) VALUES (100, 'Newbie', 'N', '', '2024-01-01 00:00:00', 'active')",
    );
    execSql(db, "UPDATE users SET views = 0 WHERE username = 'Alice'");
    const before = snapshotTree(out);
    const result = build();
    expect(result.code).toBe(5);
    expect(oneErrorLine(result.stderr)).toContain('refusing to overwrite');
    expect(snapshotTree(out)).toEqual(before);
  });

  it('a symbolic link inside the out dir is never written through', () => {
    const elsewhere = join(dir.path, 'elsewhere');
    mkdirSync(elsewhere);
    mkdirSync(out);
    symlinkSync(elsewhere, join(out, 'api'));
    const result = build();
    expect(result.code).toBe(5);
    expect(oneErrorLine(result.stderr)).toContain('symbolic link');
    expect(listFiles(elsewhere)).toEqual([]);
  });
});
