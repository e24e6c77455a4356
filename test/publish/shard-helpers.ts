/**
 * A store built as n shards and published into one prefix, and the checks a sharded prefix must
 * pass: the joined list is the whole store's list (every creator once), its gzip variant decodes to
 * it, every listed user has both profile objects, and the public objects are the shards' trees.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { expect } from 'vitest';
import { CREATORS_FILE, CREATORS_GZIP_FILE } from '../../src/core/layout.js';
import { buildTo } from '../helpers/build.js';
import { publishedFiles } from '../helpers/output.js';
import { clientFor, readBucket, type S3Server } from '../helpers/s3.js';
import { randomSample } from '../helpers/sample.js';
import { makeStore } from '../faults/helpers.js';
import { PREFIX, sql } from './helpers.js';

export interface ShardedSite {
  db: string;
  /** The whole tree, built from the same store: what the joined list must hold. */
  whole: string;
  shards: string[];
  server: S3Server;
  bucket: string;
}

export async function newShardedSite(server: S3Server, dir: string, users: number, count: number, bioBytes?: number): Promise<ShardedSite> {
  const db = join(dir, 'profiles.db');
  rmSync(db, { force: true });
  makeStore(db, users, { bioBytes });
  const site = {
    db,
    whole: join(dir, 'whole'),
    shards: Array.from({ length: count }, (_, i) => join(dir, `shard-${i}`)),
    server,
    bucket: await server.bucket(),
  };
  buildShards(site);
  return site;
}

/** A round of changes to every shard: updates, removals and arrivals. */
export function change(site: ShardedSite, round: number): void {
  sql(
    site.db,
    `UPDATE users SET views = views + ${round} WHERE id % 5 = ${round % 5};` +
      ` UPDATE users SET status = 'deleted' WHERE id % 23 = ${round % 23};` +
      ` UPDATE users SET status = 'active' WHERE id % 29 = ${round % 29} AND status = 'deleted';` +
      ` INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES` +
      [0, 1, 2, 3, 4, 5]
        .map((k) => ` (${100_000 + round * 10 + k}, 'arrival${round}x${k}', 'A', '', '2025-06-01 00:00:00', 1, 'active')`)
        .join(','),
  );
}

/** Builds the whole tree and every shard from the store as it is now. */
export function buildShards(site: ShardedSite): void {
  buildTo(site.db, site.whole);
  site.shards.forEach((out, index) => buildTo(site.db, out, { shard: { index, count: site.shards.length } }));
}

/** The CLI's arguments to publish shard `index` through `endpoint`. */
export const shardArgs = (site: ShardedSite, index: number, endpoint: string, ...more: string[]): string[] => [
  'publish',
  ...['--out', site.shards[index]!, '--shard', `${index}/${site.shards.length}`],
  ...['--to', `s3://${site.bucket}/${PREFIX}`, '--endpoint', endpoint],
  ...more,
];

const usernames = (list: string): string[] => (JSON.parse(list).data as { username: string }[]).map((user) => user.username.toLowerCase());

/**
 * The joined list holds exactly `expected` (lower-case names, any order), each once, and its
 * variant decodes to it byte for byte. Throws (an assertion) otherwise: a shard dropped or repeated.
 */
export function expectJoinedList(list: Buffer, gzip: Buffer, expected: readonly string[]): void {
  expect(gunzipSync(gzip).equals(list), 'the gzip variant decodes to the list').toBe(true);
  const names = usernames(list.toString('utf8'));
  expect(new Set(names).size, 'every creator once').toBe(names.length);
  expect([...names].sort()).toEqual([...expected].sort());
}

/** The bucket holds exactly the shards' trees, with the list joined from all of them. */
export async function expectShardedExact(site: ShardedSite): Promise<void> {
  const objects = await readBucket(site.server.endpoint, site.bucket, PREFIX);
  const list = Buffer.from(objects.get(CREATORS_FILE)!.bytes, 'latin1');
  const gzip = Buffer.from(objects.get(CREATORS_GZIP_FILE)!.bytes, 'latin1');
  expect(objects.get(CREATORS_GZIP_FILE)!.contentEncoding).toBe('gzip');
  expectJoinedList(list, gzip, usernames(readFileSync(join(site.whole, CREATORS_FILE), 'utf8')));
  const expected = new Map<string, string>();
  for (const out of site.shards)
    for (const file of publishedFiles(out))
      if (file !== CREATORS_FILE && file !== CREATORS_GZIP_FILE) expected.set(file, readFileSync(join(out, file), 'latin1'));
  const live = [...objects.keys()].filter(
    (key) => !key.startsWith('.profile-snapshot/') && key !== CREATORS_FILE && key !== CREATORS_GZIP_FILE,
  );
  expect(live.sort()).toEqual([...expected.keys()].sort());
  for (const [key, bytes] of expected) expect(objects.get(key)!.bytes, key).toBe(bytes);
  // Each shard keeps only its current part: what a killed publish or an older part left is gone.
  const parts = [...objects.keys()].filter((key) => /^\.profile-snapshot\/shards\/\d+-of-\d+\/parts\//.test(key));
  expect(parts.length).toBeLessThanOrEqual(2 * site.shards.length);
}

/** Listed users a reader's sample reads the profiles of, and how many reads it keeps in flight. */
const SAMPLED_USERS = 50;
const READER_LANES = 4;

/**
 * A reader's sample of the live API: the list, its variant, the list again and the variant again;
 * when neither changed meanwhile, the variant decodes to the list, and every listed user sampled
 * (of either) has both profile objects. Returns whether a stable pair was checked.
 * `variantMayDiffer`: a composer was just killed between completing the list and its variant, so
 * the two may be one join apart (docs/scaling-out.md) until the next join; each must still be whole.
 */
export async function sampleReader(endpoint: string, bucket: string, variantMayDiffer = false): Promise<boolean> {
  const client = clientFor(endpoint);
  const read = async (path: string): Promise<Buffer | undefined> => {
    try {
      const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `${PREFIX}/${path}` }));
      return Buffer.from(await object.Body!.transformToByteArray());
    } catch (error) {
      if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
      throw error;
    }
  };
  try {
    const [list, gzip] = [await read(CREATORS_FILE), await read(CREATORS_GZIP_FILE)];
    if (list === undefined || gzip === undefined) return false;
    const decoded = gunzipSync(gzip);
    const names = new Set([...usernames(list.toString('utf8')), ...usernames(decoded.toString('utf8'))]);
    // A sample of the listed users (quick enough to fall between publishes), each under both aliases.
    const sample = randomSample([...names], SAMPLED_USERS);
    const missing: string[] = [];
    await Promise.all(
      Array.from({ length: READER_LANES }, async (_, lane) => {
        for (let i = lane; i < sample.length; i += READER_LANES)
          for (const dir of ['api/v1/users', 'service-api/v1/users'])
            if ((await read(`${dir}/${sample[i]}`)) === undefined) missing.push(`${dir}/${sample[i]}`);
      }),
    );
    // Only a sample during which neither object changed says anything (a user may leave meanwhile).
    const [listAgain, gzipAgain] = [await read(CREATORS_FILE), await read(CREATORS_GZIP_FILE)];
    if (!listAgain?.equals(list) || !gzipAgain?.equals(gzip)) return false;
    expect(missing).toEqual([]);
    if (!variantMayDiffer) expect(decoded.equals(list), 'the gzip variant decodes to the list').toBe(true);
    return true;
  } finally {
    client.destroy();
  }
}
