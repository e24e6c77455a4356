/** A built tree and a bucket for publish tests, and the checks every publish test makes. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CREATORS_GZIP_FILE } from '../../src/core/layout.js';
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';
import { publish } from '../../src/publish/publish.js';
import type { PublishOptions, PublishReport } from '../../src/publish/report.js';
import { buildTo } from '../helpers/build.js';
import { publishedFiles } from '../helpers/output.js';
import { makeStore } from '../faults/helpers.js';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { clientFor, CREDENTIALS, readBucket, type S3Server, type StoredObject } from '../helpers/s3.js';
import { randomSample } from '../helpers/sample.js';

export const PREFIX = 'site/v1';
export const CONTENT_TYPE = 'application/json; charset=utf-8';
export const CACHE_CONTROL = 'public, s-maxage=30, stale-while-revalidate=60';

export interface Site {
  db: string;
  out: string;
  server: S3Server;
  endpoint: string;
  bucket: string;
}

/** A store of `users` users (bios of `bioBytes`) built into `dir`, and a new bucket on `server`. */
export async function newSite(server: S3Server, dir: string, users: number, bioBytes?: number): Promise<Site> {
  const db = join(dir, 'profiles.db');
  const out = join(dir, 'dist');
  rmSync(db, { force: true });
  makeStore(db, users, { bioBytes });
  buildTo(db, out);
  return { db, out, server, endpoint: server.endpoint, bucket: await server.bucket() };
}

/** The CLI's arguments to publish the site's tree to its bucket under PREFIX, through `endpoint`. */
export const publishArgs = (site: Site, endpoint = site.endpoint, ...more: string[]): string[] => [
  'publish',
  ...['--out', site.out, '--to', `s3://${site.bucket}/${PREFIX}`, '--endpoint', endpoint],
  ...more,
];

/** Publishes through the library, as the CLI does, with the test's credentials. */
export async function publishSite(site: Site, options: Partial<PublishOptions> = {}, endpoint = site.endpoint): Promise<PublishReport> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  process.env.AWS_ACCESS_KEY_ID = CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = CREDENTIALS.secretAccessKey;
  return publish({
    // s3rver ignores conditional writes: accepted here, as a user would with --single-writer.
    singleWriter: site.server.name === 's3rver',
    ...options,
    out: site.out,
    remote: { bucket: site.bucket, prefix: PREFIX, endpoint, region: 'us-east-1', pathStyle: true, concurrency: 8, ...options.remote },
  });
}

export { execSql as sql } from '../helpers/store.js';

/** The public objects (the tool's own state left out). */
export const publicObjects = (objects: Map<string, StoredObject>) =>
  new Map([...objects].filter(([key]) => !key.startsWith('.profile-snapshot/')));

/** The bucket holds exactly the tree: the same keys, the same bytes, the contract's headers. */
export async function expectExact(site: Site, prefix = PREFIX, leases = ['lock']): Promise<Map<string, StoredObject>> {
  const objects = await readBucket(site.endpoint, site.bucket, prefix);
  const files = publishedFiles(site.out);
  const live = publicObjects(objects);
  expect([...live.keys()].sort()).toEqual(files);
  for (const file of files) {
    const object = live.get(file)!;
    expect(object.bytes, file).toBe(readFileSync(join(site.out, file), 'latin1'));
    expect(object.contentType, file).toBe(CONTENT_TYPE);
    expect(object.cacheControl, file).toBe(CACHE_CONTROL);
    // The list's variant is stored as what it is: the list, gzip-encoded (hosts pass it through as such).
    expect(object.contentEncoding, file).toBe(file === CREATORS_GZIP_FILE ? 'gzip' : undefined);
  }
  // The record, and the leases: the lock every writing publish takes (released, not deleted), and
  // the watchers' leadership.
  const bookkeeping = [...leases, 'remote-intent', 'remote-state'].map((name) => `.profile-snapshot/${name}`).sort();
  expect([...objects.keys()].filter((key) => key.startsWith('.profile-snapshot/')).sort()).toEqual(bookkeeping);
  return objects;
}

export const totalRequests = (report: PublishReport) => Object.values(report.requests).reduce((a, b) => a + b, 0);

/** Every name the creators list in `objects` names has its profile object under both aliases. */
export function expectListCovered(objects: Map<string, { bytes: string }>): number {
  const list = objects.get('service-api/v1/creators');
  if (list === undefined) return 0;
  const names = (JSON.parse(list.bytes).data as { username: string }[]).map((c) => c.username.toLowerCase());
  for (const name of names) {
    expect(objects.has(`api/v1/users/${name}`), name).toBe(true);
    expect(objects.has(`service-api/v1/users/${name}`), name).toBe(true);
  }
  return names.length;
}

/**
 * A reader's view: the creators list, then both profile objects of every name in it (or of `sampled`
 * names drawn anew each time, for a large list read over and over). True when the list was the same
 * before and after the profiles were read (else the sample says nothing), and there was one.
 */
export async function listCoveredWhileReading(endpoint: string, bucket: string, prefix = PREFIX, sampled = Infinity): Promise<boolean> {
  const client = clientFor(endpoint);
  const read = async (path: string) => {
    try {
      const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `${prefix}/${path}` }));
      return Buffer.from(await object.Body!.transformToByteArray()).toString('utf8');
    } catch (error) {
      if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
      throw error;
    }
  };
  try {
    const before = await read('service-api/v1/creators');
    if (before === undefined) return false; // nothing published yet
    const listed = (JSON.parse(before).data as { username: string }[]).map((c) => c.username.toLowerCase());
    const names = randomSample(listed, sampled);
    const missing: string[] = [];
    for (const name of names)
      for (const dir of ['api/v1/users', 'service-api/v1/users'])
        if ((await read(`${dir}/${name}`)) === undefined) missing.push(`${dir}/${name}`);
    if ((await read('service-api/v1/creators')) !== before) return false;
    expect(missing).toEqual([]);
    return true;
  } finally {
    client.destroy();
  }
}

/**
 * Registers the hooks of a publish test file: one S3 server for the file (from `start`), and a new
 * temp folder for each test. Read `server` and `dir` inside tests.
 */
export function s3Workspace(start: () => Promise<S3Server>, prefix: string): { readonly server: S3Server; readonly dir: string } {
  let server: S3Server | undefined, dir: string | undefined;
  beforeAll(async () => {
    server = await start();
  });
  afterAll(async () => {
    await server?.close();
  });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
  });
  afterEach(() => rmSync(dir!, { recursive: true, force: true }));
  return {
    get server() {
      return server!;
    },
    get dir() {
      return dir!;
    },
  };
}
