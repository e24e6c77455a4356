/**
 * `profile-snapshot publish` through the real CLI: exit codes, messages that name endpoint, bucket
 * and cause, and credentials that never show.
 */
import { appendFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { beforeEach, describe, expect, it } from 'vitest';
import { freePort, s3Env, startS3rver } from '../helpers/s3.js';
import { runCliAsync } from '../helpers/process.js';
import { expectExact, newSite, PREFIX, publishArgs, s3Workspace, sql, type Site } from './helpers.js';
import { buildTo } from '../helpers/build.js';

const SECRET = 'wJalrXUtnFEMI-this-secret-must-never-show';

describe('publish CLI', () => {
  const workspace = s3Workspace(startS3rver, 'ps-publish-cli-');
  let site: Site;
  beforeEach(async () => {
    site = await newSite(workspace.server, workspace.dir, 20);
  });

  // s3rver ignores conditional writes: accepted, as a user would.
  const args = (...more: string[]) => publishArgs(site, site.endpoint, '--single-writer', ...more);

  it('publishes with the target and endpoint from the environment, and says what it did', async () => {
    const run = await runCliAsync(['publish', '--out', site.out, '--json', '--single-writer'], {
      env: s3Env({ PROFILE_PUBLISH_TO: `s3://${site.bucket}/${PREFIX}`, AWS_ENDPOINT_URL_S3: site.endpoint }),
    });
    expect(run.stderr).toMatch(
      /published .* to s3:\/\/profiles-\d+-\d+\/site\/v1 at http:\/\/127\.0\.0\.1:\d+: 47 objects put \(20 profiles, the creators list\)/,
    );
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.objects).toEqual({ put: 47, deleted: 0, unchanged: 0 });
    // 47 objects, intent and state; the lock taken, marked (the store ignores conditional writes,
    // accepted with --single-writer) and released; the three probe writes that found it out.
    expect(report.requests.PUT).toBe(49 + 3 + 3);
    expect(run.stderr).toMatch(/warning: .* ignores conditional writes \(accepted with --single-writer\)/);
    await expectExact(site);
    const again = await runCliAsync(args(), { env: s3Env() });
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/is up to date \(47 objects\); 2 requests/);
  });

  it('takes flags over the environment, and path-style URLs for a host name endpoint', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const localhost = site.endpoint.replace('127.0.0.1', 'localhost');
    const run = await runCliAsync(args('--endpoint', localhost, '--path-style'), {
      env: s3Env({ AWS_ENDPOINT_URL_S3: closed, AWS_ENDPOINT_URL: closed }),
    });
    expect(run.stderr).toMatch(/published .* at http:\/\/localhost:\d+/);
    expect(run.code).toBe(0);
    await expectExact(site);
  });

  it('exits 2 on usage errors', async () => {
    const none = await runCliAsync(['publish', '--out', site.out], { env: s3Env() });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/no bucket to publish to.*--to s3:\/\/<bucket>/);
    const bad = await runCliAsync(['publish', '--out', site.out, '--to', 'https://bucket/x'], { env: s3Env() });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--to must be an s3:\/\/ URL/);
    const help = await runCliAsync(['publish', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/6 the bucket is unusable/);
    expect(help.stdout).toMatch(/7 refused by the deletion guard/);
  });

  it('exits 5 for a tree that is not publishable, writing nothing', async () => {
    const empty = await runCliAsync(args('--out', join(workspace.dir, 'nothing-here')), { env: s3Env() });
    expect(empty.code).toBe(5);
    expect(empty.stderr).toMatch(/holds no snapshot.*Fix: run profile-snapshot build/);
    // An interrupted build: entries claimed, never settled.
    appendFileSync(join(site.out, '.profile-snapshot/manifest'), '\nu\tuser00001\t-\n');
    const pending = await runCliAsync(args('--wait', '100'), { env: s3Env() });
    expect(pending.code).toBe(5);
    expect(pending.stderr).toMatch(/not publishable: 1 entries of its manifest are pending/);
    const listing = await fetch(`${site.endpoint}/${site.bucket}?list-type=2`);
    expect(await listing.text()).not.toMatch(/<Key>/);
  });

  it('exits 5 for a tree missing a document, before writing anything', async () => {
    rmSync(join(site.out, '_errors/not-found.json'));
    const errorDocument = await runCliAsync(args(), { env: s3Env() });
    expect(errorDocument.code).toBe(5);
    expect(errorDocument.stderr).toMatch(/is not publishable: _errors\/not-found\.json missing/);
    rmSync(site.out, { recursive: true });
    buildTo(site.db, site.out);
    rmSync(join(site.out, 'api/v1/users/user00003'));
    const profile = await runCliAsync(args(), { env: s3Env() });
    expect(profile.code).toBe(5);
    expect(profile.stderr).toMatch(/is not publishable: api\/v1\/users\/user00003 is missing although the manifest lists it/);
    const listing = await fetch(`${site.endpoint}/${site.bucket}?list-type=2`);
    expect(await listing.text()).not.toMatch(/<Key>/);
  });

  it('exits 5 for a tree whose gzip variant of the list is missing or made from another list, writing nothing', async () => {
    const variant = join(site.out, 'service-api/v1/.creators.gz');
    const manifest = join(site.out, '.profile-snapshot/manifest');
    const built = readFileSync(manifest, 'utf8');
    rmSync(variant);
    const gone = await runCliAsync(args(), { env: s3Env() });
    expect(gone.code).toBe(5);
    expect(gone.stderr).toMatch(/is not publishable: service-api\/v1\/\.creators\.gz missing/);
    // An older tree (or a damaged manifest) whose variant entry does not carry the list's hash.
    writeFileSync(variant, gzipSync('{}'));
    writeFileSync(manifest, built.replace(/^(f\tservice-api\/v1\/\.creators\.gz\t)[^\t]+/m, '$1AAAAAAAAAAAAAAAA'));
    const stale = await runCliAsync(args(), { env: s3Env() });
    expect(stale.code).toBe(5);
    expect(stale.stderr).toMatch(/\.creators\.gz was made from another creators list than service-api\/v1\/creators/);
    const listing = await fetch(`${site.endpoint}/${site.bucket}?list-type=2`);
    expect(await listing.text()).not.toMatch(/<Key>/);
  });

  it('exits 6 naming endpoint, bucket and cause when the remote is unusable, never showing secrets', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const env = s3Env({ AWS_SECRET_ACCESS_KEY: SECRET });
    const cases: [string[], Record<string, string>, RegExp][] = [
      [
        args('--endpoint', closed, '--json'),
        env,
        /s3:\/\/profiles-\d+-\d+\/site\/v1 at http:\/\/127\.0\.0\.1:\d+\): the endpoint did not answer \(ECONNREFUSED\)/,
      ],
      [args('--to', 's3://no-such-bucket', '--json'), env, /s3:\/\/no-such-bucket at .*: the bucket does not exist/],
      [
        args('--json'),
        { ...env, AWS_ACCESS_KEY_ID: 'AKIAWRONGWRONGWRONG' },
        /access denied \(InvalidAccessKeyId\).*Fix: check the credentials/,
      ],
      [args('--endpoint', `http://user:${SECRET}@127.0.0.1:1`, '--json'), env, /at http:\/\/127\.0\.0\.1:1\): the endpoint did not answer/],
    ];
    for (const [args, caseEnv, message] of cases) {
      const run = await runCliAsync(args, { env: caseEnv });
      expect(run.stderr).toMatch(message);
      expect(run.code, run.stderr).toBe(6);
      expect(JSON.parse(run.stdout).error.kind).toBe('remote');
      for (const text of [run.stdout, run.stderr]) {
        expect(text).not.toContain(SECRET);
        expect(text).not.toContain('AKIAWRONG');
      }
    }
  }, 60_000);

  it('exits 7 when the deletion guard refuses, and --force overrides it', async () => {
    site = await newSite(workspace.server, workspace.dir, 150);
    expect((await runCliAsync(args(), { env: s3Env() })).code).toBe(0);
    sql(site.db, 'DELETE FROM socials; DELETE FROM bans; DELETE FROM users WHERE id > 20;');
    buildTo(site.db, site.out);
    const refused = await runCliAsync(args(), { env: s3Env() });
    expect(refused.code).toBe(7);
    expect(refused.stderr).toMatch(
      /refused to publish .* it would delete 260 objects \(87% of the 300 live profile objects\), more than the 100 allowed; nothing was changed\. Fix: .*--max-deletes 260 \(or --force\)/,
    );
    const forced = await runCliAsync(args('--force'), { env: s3Env() });
    expect(forced.code).toBe(0);
    await expectExact(site);
  });
});

describe('--single-writer with --shard', () => {
  const refusal = /--single-writer cannot publish shard 0\/2: a sharded prefix has 2 writers/;
  const remote = ['--to', 's3://profiles/p', '--endpoint', 'http://127.0.0.1:9', '--path-style', '--single-writer'];

  it('is refused (exit 2, one line saying why) by publish and by watch --publish, before anything is read or sent', async () => {
    for (const args of [
      ['publish', '--out', '/nonexistent/out', '--shard', '0/2', ...remote],
      ['watch', '--db', '/nonexistent/profiles.db', '--out', '/nonexistent/out', '--shard', '0/2', '--publish', ...remote.slice(1)],
    ]) {
      const run = await runCliAsync(args, { env: s3Env() });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(refusal);
      expect(
        run.stderr
          .trim()
          .split('\n')
          .filter((line) => line.includes('profile-snapshot:')),
      ).toHaveLength(1);
    }
  });
});
