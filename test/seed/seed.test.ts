/** The synthetic store: deterministic, shaped like the platform, to the contract, and careful with files. */
import Database from 'better-sqlite3';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTo } from '../helpers/build.js';
import { runCli } from '../helpers/process.js';
import { validateTree } from '../helpers/schemas.js';
import { tempDir } from '../helpers/store.js';

let dir: ReturnType<typeof tempDir>;
beforeAll(() => {
  dir = tempDir();
});
afterAll(() => dir.cleanup());

const dump = (file: string) => {
  const db = new Database(file, { readonly: true });
  const tables = ['users', 'socials', 'badges', 'bans', 'decorations'].map((t) =>
    db.prepare(`SELECT * FROM ${t} ORDER BY 1, 2`).raw().all(),
  );
  db.close();
  return JSON.stringify(tables);
};

describe('profile-snapshot seed', () => {
  it('is deterministic for a seed and differs for another', () => {
    const [a, b, c] = ['a.db', 'b.db', 'c.db'].map((f) => join(dir.path, f));
    expect(runCli(['seed', '--db', a!, '--users', '3000', '--seed', '7']).code).toBe(0);
    expect(runCli(['seed', '--db', b!, '--users', '3000', '--seed', '7']).code).toBe(0);
    expect(runCli(['seed', '--db', c!, '--users', '3000', '--seed', '8']).code).toBe(0);
    expect(dump(a!)).toBe(dump(b!));
    expect(dump(a!)).not.toBe(dump(c!));
  });

  it("has the platform's shape", () => {
    const file = join(dir.path, 'shape.db');
    const result = runCli(['seed', '--db', file, '--users', '20000']);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/seeded .*20,000 users/);
    const db = new Database(file, { readonly: true });
    const share = (where: string) => (db.prepare(`SELECT count(*) AS n FROM users WHERE ${where}`).get() as { n: number }).n / 20000;
    expect(share("status = 'active'")).toBeCloseTo(0.8, 2);
    expect(share("status IN ('suspended', 'banned')")).toBeCloseTo(0.08, 2);
    expect(share("status IN ('inactive', 'deleted')")).toBeCloseTo(0.12, 2);
    expect(share('decoration_id IS NOT NULL')).toBeCloseTo(1 / 3, 2);
    expect(share('custom_domain IS NOT NULL')).toBeGreaterThan(0.05);
    expect(share('length(bio) BETWEEN 0 AND 300')).toBe(1);
    expect(share('length(bio) = 0')).toBeGreaterThan(0);
    expect(share("bio GLOB '*[^ -~]*'")).toBeGreaterThan(0.3); // non-ASCII Unicode
    const perUser = db
      .prepare(
        'SELECT max(n) AS most, min(n) AS least FROM (SELECT count(s.id) AS n FROM users u LEFT JOIN socials s ON s.user_id = u.id GROUP BY u.id)',
      )
      .get() as { most: number; least: number };
    expect(perUser).toEqual({ most: 5, least: 0 });
    db.close();
  });

  it('builds without a single warning, every document valid', () => {
    const file = join(dir.path, 'clean.db');
    expect(runCli(['seed', '--db', file, '--users', '2000']).code).toBe(0);
    const out = join(dir.path, 'dist');
    const report = buildTo(file, out);
    expect(report.warnings).toEqual([]);
    expect(report.profiles).toBeGreaterThan(1600);
    expect(validateTree(out)).toEqual([]);
  });

  it('refuses to overwrite an existing file without --force (exit 5), replaces it with --force', () => {
    const file = join(dir.path, 'precious.db');
    writeFileSync(file, 'precious');
    const refused = runCli(['seed', '--db', file, '--users', '10']);
    expect(refused.code).toBe(5);
    expect(refused.stderr).toContain(`refusing to overwrite ${file}`);
    expect(refused.stderr).toContain('--force');
    expect(readFileSync(file, 'utf8')).toBe('precious');
    expect(runCli(['seed', '--db', file, '--users', '10', '--force']).code).toBe(0);
    expect(dump(file)).toContain('"active"');
  });

  it('rejects a non-numeric size (exit 2)', () => {
    expect(runCli(['seed', '--db', join(dir.path, 'x.db'), '--users', 'lots']).code).toBe(2);
  });
});
