/**
 * R2's rule for the parts of one upload (every part but the last the same size, the last no larger),
 * met by the join, and what it joined served by the Worker: shards published into moto_server with
 * equal parts (what an R2 endpoint gets), each part's size read back from the store, then the bucket
 * copied into the R2 bucket of the committed Worker in workerd (miniflare) and the creators list read
 * over real HTTP, with and without gzip.
 */
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CREATORS_FILE, CREATORS_GZIP_FILE } from '../../src/core/layout.js';
import { publish } from '../../src/publish/publish.js';
import { startWorker } from '../hosting/cdn-fixture.js';
import { gzipNegotiationFailures, send } from '../hosting/request-table.js';
import { clientFor, CREDENTIALS, hasMoto, readBucket, startMoto } from '../helpers/s3.js';
import { PREFIX, s3Workspace } from './helpers.js';
import { expectShardedExact, newShardedSite } from './shard-helpers.js';

const MiB = 2 ** 20;

describe.skipIf(!hasMoto)('a joined list under R2 rules, served by the Worker in workerd', () => {
  const workspace = s3Workspace(startMoto, 'ps-shards-r2-');

  /** The sizes of the parts the object was completed from, as the store reports them (HEAD ?partNumber=). */
  async function partSizes(bucket: string, key: string): Promise<number[]> {
    const client = clientFor(workspace.server.endpoint);
    try {
      const first = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key, PartNumber: 1 }));
      const sizes = [first.ContentLength!];
      for (let part = 2; part <= (first.PartsCount ?? 1); part++) {
        sizes.push((await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key, PartNumber: part }))).ContentLength!);
      }
      return sizes;
    } finally {
      client.destroy();
    }
  }

  it('joins in parts of 5 MiB but the last, and the Worker serves the list and its gzip variant', async () => {
    // Bios of 12 kB: a list of about 12 MB in 3 parts, so windows of 5 MiB cross the parts' seams.
    const site = await newShardedSite(workspace.server, workspace.dir, 1200, 3, 12_000);
    process.env.AWS_ACCESS_KEY_ID = CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = CREDENTIALS.secretAccessKey;
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
    const remote = {
      bucket: site.bucket,
      prefix: PREFIX,
      endpoint: workspace.server.endpoint,
      region: 'us-east-1',
      pathStyle: true,
      concurrency: 16,
      equalParts: true,
    };
    for (const [index, out] of site.shards.entries()) {
      const report = await publish({ out, shard: { index, count: site.shards.length }, remote });
      if (index === site.shards.length - 1) expect(report.shard?.join?.joined).toBe(true);
    }

    const listBytes = readFileSync(join(site.whole, CREATORS_FILE)).length;
    expect(listBytes).toBeGreaterThan(10 * MiB);
    const identity = await partSizes(site.bucket, `${PREFIX}/${CREATORS_FILE}`);
    expect(identity.length).toBe(Math.ceil(listBytes / (5 * MiB)));
    expect(identity.slice(0, -1).every((size) => size === 5 * MiB)).toBe(true);
    expect(identity.at(-1)).toBeLessThanOrEqual(5 * MiB);
    const gzip = await partSizes(site.bucket, `${PREFIX}/${CREATORS_GZIP_FILE}`);
    expect(gzip.slice(0, -1).every((size) => size === 5 * MiB)).toBe(true);
    expect(gzip.at(-1)).toBeLessThanOrEqual(5 * MiB);
    await expectShardedExact(site);

    // The Worker reads the list and its variant alone here: the profiles are the request table's (worker.test.ts).
    const lists = new Set([`${PREFIX}/${CREATORS_FILE}`, `${PREFIX}/${CREATORS_GZIP_FILE}`]);
    const objects = await readBucket(workspace.server.endpoint, site.bucket, '', (key) => lists.has(key));
    const host = await startWorker(objects, { PREFIX: PREFIX, CACHE: 'off' });
    try {
      const list = Buffer.from(objects.get(`${PREFIX}/${CREATORS_FILE}`)!.bytes, 'latin1');
      expect(await gzipNegotiationFailures((method, target, headers) => send(host.origin, method, target, headers), list)).toEqual([]);
      const served = await send(host.origin, 'GET', '/service-api/v1/creators');
      expect(served.status).toBe(200);
      expect(JSON.parse(served.body).data.length).toBe(JSON.parse(readFileSync(join(site.whole, CREATORS_FILE), 'utf8')).data.length);
    } finally {
      await host.close();
    }
  }, 240_000);
});
