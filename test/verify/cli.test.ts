/**
 * `profile-snapshot verify` through the real, compiled CLI (bin/profile-snapshot.js; `npm test`
 * compiles first): exit 0 and one summary line when clean; exit 5 with every defect listed, one per
 * line, when not; `--json` for machines; `--netlify`; the out dir from PROFILE_OUT.
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/process.js';
import { REPO, tempDir } from '../helpers/store.js';
import { verify } from '../../src/verify/index.js';
import { PARALLEL_FROM } from '../../src/verify/parallel.js';
import { sampleTree, type Tree } from './fixture.js';

let tree: Tree | undefined;
afterEach(() => tree?.cleanup());
const fresh = () => (tree = sampleTree());

describe('profile-snapshot verify', () => {
  it('exits 0 on a clean build, with one summary line', () => {
    const t = fresh();
    const r = runCli(['verify', '--out', t.out]);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^profile-snapshot: verified .*dist: no defects \(18 profiles, 14 creators, \d+ files\); \d+\.\d\d s\n$/);
    expect(r.code).toBe(0);
  });

  it('exits 5 listing every defect, one line each, then what to do', () => {
    const t = fresh();
    t.remove('service-api/v1/users/bob');
    t.write('api/v1/users/zoe', '{"success":tr');
    writeFileSync(t.path('api/v1/notes.txt'), 'hello');
    const r = runCli(['verify', '--out', t.out]);
    expect(r.code).toBe(5);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines.filter((l) => l.startsWith('defect: '))).toEqual([
      expect.stringMatching(/^defect: unparseable: api\/v1\/users\/zoe: does not parse as JSON/),
      'defect: alias-missing: service-api/v1/users/bob: missing, while api/v1/users/bob exists: every profile must be published under every alias path, or requests there answer 404',
      expect.stringMatching(/^defect: creators-unknown: service-api\/v1\/creators: entry 13 \("zoe"\) has no profile/),
      expect.stringMatching(/^defect: stray: api\/v1\/notes\.txt: not a document of the API/),
    ]);
    expect(lines.at(-1)).toMatch(
      /^profile-snapshot: .*dist must not be deployed: 4 defects \(1 unparseable, 1 alias-missing, 1 creators-unknown, 1 stray\)\. Fix: repair it with "profile-snapshot build --full"/,
    );
  });

  it('--json prints the whole report on stdout, clean or not', () => {
    const t = fresh();
    const clean = runCli(['verify', '--out', t.out, '--json']);
    expect(clean.code).toBe(0);
    expect(JSON.parse(clean.stdout)).toMatchObject({ ok: true, defects: [], profiles: 18, creators: 14, netlify: false });
    t.remove('_errors/not-found.json');
    const broken = runCli(['verify', '--out', t.out, '--json']);
    expect(broken.code).toBe(5);
    const report = JSON.parse(broken.stdout);
    expect(report).toMatchObject({ ok: false, summary: { missing: 1 } });
    expect(report.defects).toEqual([
      { kind: 'missing', path: '_errors/not-found.json', message: expect.stringMatching(/NOT_FOUND error document is missing/) },
    ]);
    expect(broken.stderr).not.toContain('defect: ');
  });

  it('--netlify checks the folder limit and the committed netlify.toml (from --root)', () => {
    const t = fresh();
    const ok = runCli(['verify', '--out', t.out, '--netlify', '--root', REPO]);
    expect(ok.stderr).toContain('Netlify checks included');
    expect(ok.code).toBe(0);
    const root = join(t.root, 'empty-repo');
    mkdirSync(root);
    const missing = runCli(['verify', '--out', t.out, '--netlify', '--root', root]);
    expect(missing.code).toBe(5);
    expect(missing.stderr).toMatch(/defect: netlify-config: netlify\.toml: missing in/);
  });

  it('reads the out dir from PROFILE_OUT; a missing out dir is exit 5 with one line', () => {
    const t = fresh();
    expect(runCli(['verify'], { env: { PROFILE_OUT: t.out } }).code).toBe(0);
    const none = runCli(['verify', '--out', join(t.root, 'nothing')]);
    expect(none.code).toBe(5);
    expect(none.stderr).toMatch(/^profile-snapshot: cannot read the out dir .*nothing: ENOENT.*Fix: build the snapshot first/);
  });

  it('usage errors exit 2', () => {
    expect(runCli(['verify', '--bogus']).code).toBe(2);
    expect(runCli(['verify', '--wait', 'soon']).code).toBe(2);
  });

  it('audits a large tree on two threads (the compiled worker) with the very result of one thread', () => {
    const dir = tempDir('profile-snapshot-verify-large-');
    try {
      const db = join(dir.path, 'seeded.db');
      const out = join(dir.path, 'dist');
      expect(runCli(['seed', '--db', db, '--users', String(Math.ceil(PARALLEL_FROM * 1.4))]).code).toBe(0);
      expect(runCli(['build', '--db', db, '--out', out], { env: { SOURCE_DATE_EPOCH: '1767225600' } }).code).toBe(0);
      const clean = JSON.parse(runCli(['verify', '--out', out, '--json']).stdout);
      expect(clean).toMatchObject({ ok: true, defects: [] });
      expect(clean.profiles).toBeGreaterThan(PARALLEL_FROM);
      // Damage at both ends of the name list: one end is the worker's share, the other this thread's.
      const names = readdirSync(join(out, 'api/v1/users')).sort();
      writeFileSync(join(out, 'api/v1/users', names[0]!), '{"success":');
      writeFileSync(join(out, 'api/v1/users', names.at(-1)!), '{"success":true}');
      const r = runCli(['verify', '--out', out, '--json']);
      expect(r.code).toBe(5);
      const report = JSON.parse(r.stdout);
      expect(report.defects).toEqual(verify(out, { parallel: false, waitMs: 0 }).defects);
      expect(report.summary).toMatchObject({ unparseable: 1, schema: 1 });
      expect(report.threads).toBe(2);
    } finally {
      dir.cleanup();
    }
  }, 120_000);
});
