/**
 * Several publishers racing on one prefix, as a new user meets it: a CI deploy beside a watcher, an
 * operator publishing by hand, a second watcher. Against moto_server, which honours conditional
 * writes as S3 and R2 do: two and then three real `publish` processes start at the same moment, each
 * with its own tree of one store (the same third of the users changed in different ways, different
 * users deleted), then a lone publish of one tree. Each racer ends with exit 0 or 8 (the prefix held
 * too long), and after the lone publish the prefix is byte-exact to its tree every round: judged by
 * this test's own listing and MD5s, never by the tool's record.
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildTo } from '../helpers/build.js';
import { publishedFiles } from '../helpers/output.js';
import { runCliAsync } from '../helpers/process.js';
import { clientFor, hasMoto, s3Env, startMoto } from '../helpers/s3.js';
import { makeStore } from '../faults/helpers.js';
import { PREFIX, publishArgs, publishSite, s3Workspace, sql, type Site } from './helpers.js';

/** What lets racers take turns: the lease flags (a TTL a loaded machine renews in time, a wait long enough for the others). */
const LEASE_FLAGS = ['--lock-timeout', '120', '--lease-ttl', '10'];
const USERS = 1000;

/** Each tree: the same third of the users changed its own way, and a few dozen users of its own deleted. */
const TREES: Record<string, string> = {
  base: '',
  x: "UPDATE users SET display_name = 'X ' || id WHERE id % 3 = 0; UPDATE users SET status = 'deleted' WHERE id % 97 = 1;",
  y: "UPDATE users SET bio = 'Y bio ' || id WHERE id % 3 = 0; UPDATE users SET status = 'deleted' WHERE id % 97 = 2;",
  z: "UPDATE users SET views = views + 1000 WHERE id % 3 = 0; UPDATE users SET status = 'deleted' WHERE id % 97 = 3;",
};

/** How the prefix differs from the tree in `out`, by the test's own listing and MD5s. */
async function differences(site: Site, out: string): Promise<{ missing: string[]; extra: string[]; different: string[] }> {
  const client = clientFor(site.endpoint);
  const listed = new Map<string, string>();
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: site.bucket, Prefix: `${PREFIX}/`, ContinuationToken: token }));
    for (const object of page.Contents ?? []) {
      const key = object.Key!.slice(PREFIX.length + 1);
      if (!key.startsWith('.profile-snapshot/')) listed.set(key, object.ETag!.replaceAll('"', ''));
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  client.destroy();
  const files = publishedFiles(out);
  const md5 = (file: string) =>
    createHash('md5')
      .update(readFileSync(join(out, file)))
      .digest('hex');
  return {
    missing: files.filter((file) => !listed.has(file)),
    extra: [...listed.keys()].filter((key) => !files.includes(key)),
    different: files.filter((file) => listed.has(file) && listed.get(file) !== md5(file)),
  };
}

describe.skipIf(!hasMoto)('publishers racing on one prefix (moto_server)', () => {
  if (!hasMoto) console.warn('moto_server is not installed: the race tests are skipped (pip install "moto[server]")');
  const workspace = s3Workspace(startMoto, 'ps-publish-race-');

  it('leave it wrong never: after 2 and 3 racers, a lone publish makes it byte-exact, every round', async () => {
    const db = join(workspace.dir, 'store.db');
    makeStore(db, USERS);
    const outs: Record<string, string> = {};
    for (const [name, change] of Object.entries(TREES)) {
      const copy = join(workspace.dir, `${name}.db`);
      copyFileSync(db, copy);
      if (change) sql(copy, change);
      outs[name] = join(workspace.dir, name);
      buildTo(copy, outs[name]);
    }
    const site: Site = {
      db,
      out: outs.base!,
      server: workspace.server,
      endpoint: workspace.server.endpoint,
      bucket: await workspace.server.bucket(),
    };
    await publishSite(site);
    const rounds: [string[], string][] = [
      [['x', 'y'], 'x'],
      [['x', 'y'], 'y'],
      [['y', 'x'], 'x'],
      [['x', 'y', 'z'], 'z'],
      [['z', 'y', 'x'], 'y'],
    ];
    for (const [round, [racers, lone]] of rounds.entries()) {
      const runs = await Promise.all(
        racers.map((name) =>
          runCliAsync(publishArgs({ ...site, out: outs[name]! }, site.endpoint, '--force', ...LEASE_FLAGS), { env: s3Env() }),
        ),
      );
      for (const [i, run] of runs.entries()) expect([0, 8], `round ${round + 1}, racer ${racers[i]}: ${run.stderr}`).toContain(run.code);
      const alone = await runCliAsync(publishArgs({ ...site, out: outs[lone]! }, site.endpoint, '--force', ...LEASE_FLAGS), {
        env: s3Env(),
      });
      expect(alone.code, alone.stderr).toBe(0);
      const wrong = await differences(site, outs[lone]!);
      const count = wrong.missing.length + wrong.extra.length + wrong.different.length;
      const detail = `${wrong.missing.length} missing, ${wrong.extra.length} extra, ${wrong.different.length} different (e.g. ${[...wrong.missing, ...wrong.extra, ...wrong.different].slice(0, 3).join(', ')})`;
      expect(count, `round ${round + 1} (${racers.join(' vs ')}, then ${lone} alone): ${detail}`).toBe(0);
    }
  }, 300_000);
});
