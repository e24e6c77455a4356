/**
 * `verify` against real builds of the sample store: a clean build verifies clean, and one corrupted
 * tree per defect class (made by damaging a real build in a temp folder) is detected with a clear
 * message naming the path.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { renderNetlifyToml } from '../../src/hosting/hosts/netlify-config.js';
import { OutDirLock } from '../../src/output/lock.js';
import { verify, type Defect, type DefectKind } from '../../src/verify/index.js';
import { validateTree } from '../helpers/schemas.js';
import { buildTo } from '../helpers/build.js';
import { REPO } from '../helpers/store.js';
import { rewriteCreators, sampleTree, type Tree } from './fixture.js';

let tree: Tree | undefined;
afterEach(() => tree?.cleanup());
const fresh = () => (tree = sampleTree());

/** The defects of a tree, after checking every one has a kind, a path and a message. */
function defectsOf(t: Tree, options: Parameters<typeof verify>[1] = {}): Defect[] {
  const report = verify(t.out, { waitMs: 0, ...options });
  for (const d of report.defects) {
    expect(d.path).not.toBe('');
    expect(d.message.length).toBeGreaterThan(20);
  }
  expect(report.ok).toBe(report.defects.length === 0);
  return report.defects;
}
const only = (defects: Defect[], kind: DefectKind) => defects.filter((d) => d.kind === kind);
const kinds = (defects: Defect[]) => [...new Set(defects.map((d) => d.kind))].sort();

describe('a clean build', () => {
  it("verifies clean, and every document in it matches the contract's schemas (ajv)", () => {
    const t = fresh();
    const report = verify(t.out, { waitMs: 0 });
    expect(report.defects).toEqual([]);
    expect(report).toMatchObject({ ok: true, profiles: 18, creators: 14, attempts: 1 });
    expect(validateTree(t.out)).toEqual([]);
  });

  it('verifies clean with the Netlify checks against the committed netlify.toml', () => {
    const t = fresh();
    expect(verify(t.out, { waitMs: 0, netlify: true, root: REPO }).defects).toEqual([]);
  });

  it('verifies clean after a rebuild that changed and removed profiles', async () => {
    const t = fresh();
    const { TestStore } = await import('../helpers/store.js');
    const { buildTo } = await import('../helpers/build.js');
    const store = new TestStore(t.db, '');
    store.exec("UPDATE users SET views = views + 1 WHERE username = 'Alice'; UPDATE users SET status = 'deleted' WHERE username = 'bob'");
    store.close();
    buildTo(t.db, t.out);
    expect(defectsOf(t)).toEqual([]);
  });
});

describe('one corrupted tree per defect class', () => {
  it('a file that does not parse: truncated profile, creators list and error document', () => {
    const t = fresh();
    t.write('api/v1/users/bob', t.read('api/v1/users/bob').slice(0, 120));
    t.write('service-api/v1/creators', t.read('service-api/v1/creators').slice(0, -30));
    t.write('_errors/not-found.json', '{"success":false,');
    const defects = only(defectsOf(t), 'unparseable');
    expect(defects.map((d) => d.path).sort()).toEqual(['_errors/not-found.json', 'api/v1/users/bob', 'service-api/v1/creators']);
    for (const d of defects) expect(d.message).toMatch(/does not parse as JSON/);
  });

  it('a document that does not match its schema: a private field, a bad status, a bad date', () => {
    const t = fresh();
    const alice = t.json('api/v1/users/alice');
    alice.data.email = 'alice@mail.invalid';
    t.write('api/v1/users/alice', JSON.stringify(alice));
    const dave = t.json('api/v1/users/dave_99');
    dave.data.status = 'banned';
    t.write('api/v1/users/dave_99', JSON.stringify(dave));
    const error = t.json('_errors/user-not-found.json');
    error.meta.timestamp = '2026-01-01';
    t.write('_errors/user-not-found.json', JSON.stringify(error));
    const defects = only(defectsOf(t), 'schema');
    expect(defects.find((d) => d.path === 'api/v1/users/alice')?.message).toMatch(
      /ProfileResponse.*\/data must NOT have additional properties \(email\)/,
    );
    expect(defects.find((d) => d.path === 'api/v1/users/dave_99')?.message).toMatch(
      /\/data\/status must be equal to one of the allowed values \("active", "suspended"\)/,
    );
    expect(defects.find((d) => d.path === '_errors/user-not-found.json')?.message).toMatch(/\/meta\/timestamp/);
  });

  it('a creators list entry that does not match User, and a list envelope that does not match', () => {
    const t = fresh();
    const list = t.json('service-api/v1/creators');
    list.data[1].accountAgeDays = -1;
    list.meta.version = 'v2';
    t.write('service-api/v1/creators', JSON.stringify(list));
    const defects = only(defectsOf(t), 'schema');
    expect(defects.map((d) => d.message)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^entry 1 \("amy\.lee"\) does not match User: \/data\/1\/accountAgeDays must be >= 0/),
        expect.stringMatching(/^does not match CreatorsResponse: \/meta\/version must be equal to constant \("v1"\)/),
      ]),
    );
  });

  it('aliases that differ', () => {
    const t = fresh();
    const bob = t.json('service-api/v1/users/bob');
    bob.data.views = 999;
    t.replace('service-api/v1/users/bob', JSON.stringify(bob));
    const defects = defectsOf(t);
    expect(only(defects, 'alias-differs')).toEqual([
      {
        kind: 'alias-differs',
        path: 'service-api/v1/users/bob',
        message: expect.stringMatching(/^differs from api\/v1\/users\/bob: the alias paths must answer the same bytes/),
      },
    ]);
  });

  it('a profile without both aliases', () => {
    const t = fresh();
    t.remove('service-api/v1/users/bob');
    t.remove('api/v1/users/zoe');
    const defects = only(defectsOf(t), 'alias-missing');
    expect(defects.map((d) => [d.path, d.message])).toEqual([
      [
        'api/v1/users/zoe',
        expect.stringMatching(/^missing, while service-api\/v1\/users\/zoe exists: every profile must be published under every alias path/),
      ],
      ['service-api/v1/users/bob', expect.stringMatching(/^missing, while api\/v1\/users\/bob exists/)],
    ]);
  });

  it('a creators list entry without a profile', () => {
    const t = fresh();
    t.remove('api/v1/users/bob');
    t.remove('service-api/v1/users/bob');
    const defects = defectsOf(t);
    expect(only(defects, 'creators-unknown')).toEqual([
      {
        kind: 'creators-unknown',
        path: 'service-api/v1/creators',
        message: expect.stringMatching(/^entry 2 \("bob"\) has no profile \(api\/v1\/users\/bob is missing or broken\)/),
      },
    ]);
    // The manifest still lists it: the last build published it.
    expect(only(defects, 'manifest').map((d) => d.path)).toEqual(['api/v1/users/bob']);
  });

  it('a creators list entry with a non-active status', () => {
    const t = fresh();
    const dave = t.json('api/v1/users/dave_99').data;
    rewriteCreators(t, (data) => {
      const at = data.findIndex((u) => u.username.toLowerCase() > 'dave_99');
      return [...data.slice(0, at), dave, ...data.slice(at)];
    });
    const defects = defectsOf(t);
    expect(only(defects, 'creators-status')).toEqual([
      {
        kind: 'creators-status',
        path: 'service-api/v1/creators',
        message: expect.stringMatching(/^entry 4 \("dave_99"\) has status "suspended": only active users belong in the creators list/),
      },
    ]);
    expect(only(defects, 'creators-order')).toEqual([]);
    // Reported once, by its own defect (entries are checked as User, their status separately).
    expect(kinds(defects)).toEqual(['creators-status']);
  });

  it('a creators list out of order, or naming a user twice', () => {
    const t = fresh();
    rewriteCreators(t, (data) => [data[1], data[0], ...data.slice(2), data.at(-1)]);
    const defects = defectsOf(t);
    expect(only(defects, 'creators-order').map((d) => d.message)).toEqual([
      expect.stringMatching(/^entry 1 \("Alice"\) comes after "amy\.lee": the list must be ordered by lower-cased username, ascending/),
      expect.stringMatching(/^entry 14 \("zoe"\) repeats the username "zoe" \(ignoring case\)/),
    ]);
    expect(kinds(defects)).toEqual(['creators-order']);
  });

  it('a creators list that leaves out an active profile, or holds other data than the profile', () => {
    const t = fresh();
    rewriteCreators(t, (data) =>
      data.filter((u) => u.username !== 'Olivia').map((u) => (u.username === 'Uma' ? { ...u, views: u.views + 1 } : u)),
    );
    const defects = defectsOf(t);
    expect(only(defects, 'creators-missing').map((d) => d.message)).toEqual([
      expect.stringMatching(/^does not name the active profile "olivia" \(api\/v1\/users\/olivia\)/),
    ]);
    expect(only(defects, 'creators-differs').map((d) => d.message)).toEqual([
      expect.stringMatching(/^entry \d+ \("Uma"\) differs from its profile api\/v1\/users\/uma/),
    ]);
  });

  it('a published profile of an unpublishable username', () => {
    const t = fresh();
    const doc = t.json('api/v1/users/bob');
    doc.data.username = 'judy smith';
    for (const dir of ['api/v1/users', 'service-api/v1/users']) writeFileSync(join(t.out, dir, 'judy smith'), JSON.stringify(doc));
    const defects = defectsOf(t);
    expect(only(defects, 'unpublishable').map((d) => [d.path, d.message])).toEqual([
      ['api/v1/users/judy smith', expect.stringMatching(/^publishes the username "judy smith", which is not publishable/)],
    ]);
    // Not written by the tool either: it is not in the manifest.
    expect(only(defects, 'stray').map((d) => d.path)).toEqual(['api/v1/users/judy smith', 'service-api/v1/users/judy smith']);
  });

  it('a profile file whose name is not the lower-cased username inside it', () => {
    const t = fresh();
    t.write('api/v1/users/bob', t.read('api/v1/users/alice'));
    const defects = defectsOf(t);
    expect(only(defects, 'file-name')).toEqual([
      {
        kind: 'file-name',
        path: 'api/v1/users/bob',
        message: expect.stringMatching(/^the file name "bob" is not the lower-cased username inside it \("Alice"\)/),
      },
    ]);
  });

  it('missing error documents, and an error document holding another error', () => {
    const t = fresh();
    t.remove('_errors/method-not-allowed.json');
    t.write('_errors/not-found.json', t.read('_errors/user-not-found.json'));
    const defects = defectsOf(t);
    expect(only(defects, 'missing')).toEqual([
      {
        kind: 'missing',
        path: '_errors/method-not-allowed.json',
        message: expect.stringMatching(/^the METHOD_NOT_ALLOWED error document is missing/),
      },
    ]);
    expect(only(defects, 'error-document')).toEqual([
      {
        kind: 'error-document',
        path: '_errors/not-found.json',
        message: 'holds 404 "USER_NOT_FOUND", but this file answers 404 NOT_FOUND',
      },
    ]);
  });

  it('a gzip variant of the creators list that is missing, made from another list, or damaged', () => {
    const t = fresh();
    const variant = 'service-api/v1/.creators.gz';
    const list = readFileSync(join(t.out, 'service-api/v1/creators'));
    writeFileSync(join(t.out, variant), gzipSync(Buffer.concat([list, Buffer.from(' ')])));
    expect(only(defectsOf(t), 'creators-gzip').map((d) => d.message)).toEqual([
      expect.stringMatching(/stale or damaged: it decodes to more than the list's \d+ bytes|stale or damaged: its bytes differ/),
    ]);
    writeFileSync(join(t.out, variant), gzipSync(list).subarray(0, 40));
    expect(only(defectsOf(t), 'creators-gzip').map((d) => d.message)).toEqual([
      expect.stringMatching(/stale or damaged: it does not decode/),
    ]);
    t.remove(variant);
    expect(only(defectsOf(t), 'creators-gzip').map((d) => d.message)).toEqual([
      expect.stringMatching(/variant of the creators list is missing/),
    ]);
    writeFileSync(join(t.out, variant), gzipSync(list));
    expect(defectsOf(t)).toEqual([]);
  });

  it('a missing creators list, and a missing or different contract', () => {
    const t = fresh();
    t.remove('service-api/v1/creators');
    t.write('api/v1/openapi.json', t.read('api/v1/openapi.json').replace('"title": "Public Profile Service"', '"title": "Other"'));
    const defects = defectsOf(t);
    expect(only(defects, 'missing').map((d) => d.path)).toEqual(['service-api/v1/creators']);
    expect(only(defects, 'contract').map((d) => d.path)).toEqual(['api/v1/openapi.json']);
    t.remove('api/v1/openapi.json');
    expect(only(defectsOf(t), 'missing').map((d) => d.path)).toEqual(['api/v1/openapi.json', 'service-api/v1/creators']);
  });

  it('leftover temporary and staging files', () => {
    const t = fresh();
    mkdirSync(t.path('.profile-snapshot/staging'), { recursive: true });
    writeFileSync(t.path('.profile-snapshot/staging/0'), '{}');
    writeFileSync(t.path('.profile-snapshot/manifest.tmp'), '');
    writeFileSync(t.path('service-api/v1/creators.tmp'), '');
    writeFileSync(t.path('index.html.tmp'), '');
    const defects = defectsOf(t);
    expect(only(defects, 'leftover').map((d) => [d.path, d.message])).toEqual([
      ['.profile-snapshot/staging', expect.stringMatching(/^1 staged file \(0\) left by an interrupted build/)],
      ['index.html.tmp', expect.stringMatching(/^temporary file left by an interrupted write: it would be deployed and served/)],
      ['service-api/v1/creators.tmp', expect.stringMatching(/^temporary file left by an interrupted write/)],
    ]);
    // In the state folder, never served nor deployed and replaced by the next run: a warning only.
    expect(verify(t.out, { waitMs: 0 }).warnings).toEqual([
      expect.stringMatching(/^\.profile-snapshot\/manifest\.tmp: temporary file left by an interrupted run \(harmless/),
    ]);
    // The next build clears the staging folder.
    buildTo(t.db, t.out);
    expect(only(defectsOf(t), 'leftover').map((d) => d.path)).toEqual(['index.html.tmp', 'service-api/v1/creators.tmp']);
  });

  it('staged and temporary files of a live writer are its work in progress, not leftovers', () => {
    const t = fresh();
    mkdirSync(t.path('.profile-snapshot/staging'), { recursive: true });
    writeFileSync(t.path('.profile-snapshot/staging/0'), '{}');
    const lock = OutDirLock.acquire(t.out, { command: 'build' });
    try {
      writeFileSync(t.path('.profile-snapshot/status.json.tmp'), '');
      expect(defectsOf(t)).toEqual([]);
    } finally {
      lock.release();
    }
  });

  it('bookkeeping files where they would be served', () => {
    const t = fresh();
    writeFileSync(t.path('manifest'), readFileSync(t.path('.profile-snapshot/manifest')));
    mkdirSync(t.path('service-api/staging'));
    writeFileSync(t.path('service-api/staging/3'), '{}');
    writeFileSync(t.path('_errors/status.json'), '{}');
    const defects = defectsOf(t);
    expect(only(defects, 'bookkeeping').map((d) => d.path)).toEqual(['_errors/status.json', 'manifest', 'service-api/staging']);
    expect(only(defects, 'bookkeeping')[0]!.message).toMatch(/outside \.profile-snapshot\/: it would be deployed and served/);
    // Dot folders are neither deployed nor served: nothing there is reported.
    mkdirSync(t.path('.cache'));
    writeFileSync(t.path('.cache/manifest'), '');
    expect(only(defectsOf(t), 'bookkeeping')).toHaveLength(3);
  });

  it('files under the API prefixes that are not documents of the API', () => {
    const t = fresh();
    writeFileSync(t.path('api/v1/extra.json'), '{}');
    mkdirSync(t.path('api/v1/users/nested'));
    writeFileSync(t.path('_errors/teapot.json'), '{}');
    writeFileSync(t.path('index.html'), '<!doctype html>'); // a landing page of the site's: fine
    const defects = defectsOf(t);
    expect(only(defects, 'stray').map((d) => [d.path, d.message])).toEqual([
      ['_errors/teapot.json', expect.stringMatching(/^not one of the error documents/)],
      [
        'api/v1/extra.json',
        expect.stringMatching(
          /^not a document of the API, but under an API prefix: it would be served where the contract answers 404 NOT_FOUND/,
        ),
      ],
      ['api/v1/users/nested', expect.stringMatching(/^a folder in a users folder/)],
    ]);
  });

  it('a build interrupted while publishing (manifest entries pending)', () => {
    const t = fresh();
    const manifest = t.read('.profile-snapshot/manifest');
    t.write('.profile-snapshot/manifest', manifest.replace(/^(u\tbob\t).*$/m, '$1-'));
    const defects = defectsOf(t);
    expect(defects).toEqual([
      {
        kind: 'manifest',
        path: '.profile-snapshot/manifest',
        message: expect.stringMatching(/^1 entry is pending: a build was interrupted while publishing/),
      },
    ]);
  });

  it('pending entries while a writer is live: waits for its commit, then reports it', () => {
    const t = fresh();
    t.write('.profile-snapshot/manifest', t.read('.profile-snapshot/manifest').replace(/^(u\tbob\t).*$/m, '$1-'));
    const lock = OutDirLock.acquire(t.out, { command: 'build' });
    try {
      const report = verify(t.out, { waitMs: 300 });
      expect(report.attempts).toBeGreaterThan(1);
      expect(report.defects).toEqual([
        {
          kind: 'manifest',
          path: '.profile-snapshot/manifest',
          message: expect.stringMatching(/stayed pending .* while a profile-snapshot process holds the out dir/),
        },
      ]);
    } finally {
      lock.release();
    }
  });

  it('with --netlify: a folder over 54,000 files (dot folders do not count)', () => {
    const t = fresh();
    mkdirSync(t.path('assets'));
    for (let i = 0; i < 54_001; i++) writeFileSync(t.path(`assets/f${i}`), '');
    mkdirSync(t.path('.big'));
    const plain = defectsOf(t);
    expect(plain).toEqual([]);
    const defects = defectsOf(t, { netlify: true, root: REPO });
    expect(defects).toEqual([
      {
        kind: 'netlify-folder-limit',
        path: 'assets',
        message: expect.stringMatching(/^holds 54,001 files, over Netlify's limit of 54,000 per folder: the deploy would fail/),
      },
    ]);
    // The same files in a dot folder: Netlify does not deploy it, so it does not count.
    rmSync(t.path('.big'), { recursive: true });
    renameSync(t.path('assets'), t.path('.big'));
    expect(defectsOf(t, { netlify: true, root: REPO })).toEqual([]);
  }, 60_000);

  it('with --netlify: a netlify.toml that does not match the route table, or is missing', () => {
    const t = fresh();
    const root = join(t.root, 'repo');
    mkdirSync(root);
    expect(defectsOf(t, { netlify: true, root })).toEqual([
      {
        kind: 'netlify-config',
        path: 'netlify.toml',
        message: expect.stringMatching(/^missing in .*repo: Netlify would deploy without the rules/),
      },
    ]);
    writeFileSync(join(root, 'netlify.toml'), renderNetlifyToml().replace('status = 404', 'status = 200'));
    expect(defectsOf(t, { netlify: true, root })).toEqual([
      {
        kind: 'netlify-config',
        path: 'netlify.toml',
        message: expect.stringMatching(/^differs from what the route table \(src\/hosting\/routes\/routes\.ts\) renders/),
      },
    ]);
    writeFileSync(join(root, 'netlify.toml'), renderNetlifyToml());
    expect(defectsOf(t, { netlify: true, root })).toEqual([]);
  });
});
