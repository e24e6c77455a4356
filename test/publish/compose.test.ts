/**
 * Joining objects in the bucket (publish/bucket/compose.ts): the plan meets S3's and R2's part rules, and
 * on moto_server (which enforces S3's minimum part size and honours UploadPartCopy with ranges) the
 * joined object is exactly the sources' bytes, by copies alone where the layout allows it.
 */
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Remote } from '../../src/publish/bucket/client.js';
import { composeObject, prepareComposition, versionOf } from '../../src/publish/bucket/compose.js';
import { unchangedSince } from '../../src/publish/bucket/objects.js';
import {
  planParts,
  r2PartRules,
  S3_PART_RULES,
  sourceBytes,
  type ComposeSource,
  type PartRules,
  type PlannedPart,
} from '../../src/publish/bucket/compose-plan.js';
import { clientFor, CREDENTIALS, hasMoto, startMoto, startProxy, type S3Server } from '../helpers/s3.js';
import { limitTo } from '../../src/core/limit.js';

const MiB = 2 ** 20;
const partBytes = (part: PlannedPart) =>
  'copy' in part ? part.copy.end - part.copy.start : part.upload.reduce((n, piece) => n + sourceBytes(piece), 0);
const object = (key: string, size: number): ComposeSource => ({ key, start: 0, end: size });

/** Checks a plan against the rules, and that its parts are the sources' bytes in order. */
function checkPlan(sources: ComposeSource[], rules: PartRules): PlannedPart[] {
  const parts = planParts(sources, rules);
  const sizes = parts.map(partBytes);
  sizes.slice(0, -1).forEach((size) => expect(size).toBeGreaterThanOrEqual(rules.minPartBytes));
  sizes.forEach((size) => expect(size).toBeLessThanOrEqual(rules.maxPartBytes));
  if (rules.fixedPartBytes !== undefined) {
    sizes.slice(0, -1).forEach((size) => expect(size).toBe(rules.fixedPartBytes));
    expect(sizes.at(-1)).toBeLessThanOrEqual(rules.fixedPartBytes);
  }
  const ranges = (list: readonly (ComposeSource | PlannedPart)[]): string[] =>
    list.flatMap((item) => {
      if ('copy' in item) return ranges([item.copy]);
      if ('upload' in item) return ranges(item.upload);
      return 'bytes' in item ? [...item.bytes].map((b) => `b${b}`) : [`${item.key}:${item.start}-${item.end}`];
    });
  // The same bytes in the same order: ranges merged where they touch.
  const merged = (list: string[]) =>
    list.reduce<string[]>((out, range) => {
      const last = out.at(-1);
      const [k1, r1] = last?.split(':') ?? [];
      const [k2, r2] = range.split(':');
      if (last !== undefined && k1 === k2 && r1 !== undefined && r2 !== undefined && r1.split('-')[1] === r2.split('-')[0]) {
        out[out.length - 1] = `${k1}:${r1.split('-')[0]}-${r2.split('-')[1]}`;
      } else out.push(range);
      return out;
    }, []);
  expect(merged(ranges(parts))).toEqual(merged(ranges(sources.filter((s) => sourceBytes(s) > 0))));
  return parts;
}

describe('planParts', () => {
  it('copies every source of at least 5 MiB whole, and gathers the small ones into uploads', () => {
    const parts = checkPlan([object('a', 6 * MiB), object('b', 7 * MiB), { bytes: Buffer.from('],"meta":{}}') }], S3_PART_RULES);
    expect(parts.map((p) => ('copy' in p ? 'copy' : 'upload'))).toEqual(['copy', 'copy', 'upload']);
  });

  it('borrows the head of a large object to bring small pieces to the minimum', () => {
    const parts = checkPlan(
      [{ bytes: Buffer.from('{"data":[') }, object('a', 12 * MiB), object('b', 1 * MiB), object('c', 6 * MiB)],
      S3_PART_RULES,
    );
    // The last object is read whole: copying its rest would leave a part under the minimum.
    expect(parts.map((p) => ('copy' in p ? 'copy' : 'upload'))).toEqual(['upload', 'copy', 'upload']);
  });

  it('splits an object larger than the maximum without leaving a part under the minimum', () => {
    const rules = { ...S3_PART_RULES, maxPartBytes: 16 * MiB };
    expect(checkPlan([object('a', 17 * MiB)], rules).map(partBytes)).toEqual([8.5 * MiB, 8.5 * MiB]);
    const parts = checkPlan([object('a', 40 * MiB)], rules);
    expect(parts.map(partBytes)).toEqual([16 * MiB, 16 * MiB, 8 * MiB]);
    expect(parts.every((p) => 'copy' in p)).toBe(true);
  });

  it("meets R2's equal parts, copying every window that lies in one object", () => {
    const rules = r2PartRules(6 * MiB);
    const parts = checkPlan([object('a', 12 * MiB), object('b', 6 * MiB), object('c', 2 * MiB), { bytes: Buffer.from('tail') }], rules);
    expect(parts.map((p) => ('copy' in p ? 'copy' : 'upload'))).toEqual(['copy', 'copy', 'copy', 'upload']);
    // Unaligned sources still meet the rule, by uploading the windows that span them.
    checkPlan([object('a', 7 * MiB), object('b', 9 * MiB), object('c', 1 * MiB)], rules);
  });

  it('plans one empty part for nothing, and refuses more parts than one upload may have', () => {
    expect(planParts([], S3_PART_RULES)).toEqual([{ upload: [] }]);
    expect(() => planParts([object('a', 30 * MiB)], { ...r2PartRules(5 * MiB), maxParts: 3 })).toThrow(/more than the 3/);
  });
});

describe.skipIf(!hasMoto)('composeObject on moto_server', () => {
  let server: S3Server;
  let bucket: string;
  let client: S3Client;
  let remote: Remote;
  beforeAll(async () => {
    server = await startMoto();
    bucket = await server.bucket();
    client = clientFor(server.endpoint);
    process.env.AWS_ACCESS_KEY_ID = CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = CREDENTIALS.secretAccessKey;
    remote = await Remote.open({ bucket, prefix: '', endpoint: server.endpoint, region: 'us-east-1', pathStyle: true, concurrency: 4 });
  }, 30_000);
  afterAll(async () => {
    client?.destroy();
    await server?.close();
  });

  const put = async (key: string, bytes: Buffer) => {
    const out = await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bytes }));
    return out.ETag!;
  };
  const get = async (key: string) => {
    const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return { bytes: Buffer.from(await out.Body!.transformToByteArray()), encoding: out.ContentEncoding, type: out.ContentType };
  };

  it('joins objects by copies and a small uploaded tail: the exact bytes, the contract headers', async () => {
    const a = randomBytes(6 * MiB);
    const b = randomBytes(5 * MiB + 3);
    const tail = Buffer.from('the tail');
    const etagA = await put('parts/a', a);
    await put('parts/b', b);
    const result = await composeObject(
      remote,
      'joined',
      [{ key: 'parts/a', start: 0, end: a.length, etag: etagA }, { key: 'parts/b', start: 0, end: b.length }, { bytes: tail }],
      S3_PART_RULES,
      'gzip',
    );
    expect(result).toMatchObject({ copiedParts: 2, uploadedParts: 1, uploadedBytes: tail.length });
    const joined = await get('joined');
    expect(joined.bytes.equals(Buffer.concat([a, b, tail]))).toBe(true);
    expect(joined.encoding).toBe('gzip');
    expect(joined.type).toBe('application/json; charset=utf-8');
  }, 60_000);

  it('reads and uploads the small parts S3 would refuse to copy, and joins ranges', async () => {
    const small = Buffer.from('{"data":[');
    const big = randomBytes(7 * MiB);
    await put('parts/small', small);
    await put('parts/big', big);
    const result = await composeObject(
      remote,
      'joined-small',
      [
        { key: 'parts/small', start: 0, end: small.length },
        { key: 'parts/big', start: 1, end: big.length },
      ],
      S3_PART_RULES,
    );
    expect(result.uploadedParts).toBeGreaterThan(0);
    expect((await get('joined-small')).bytes.equals(Buffer.concat([small, big.subarray(1)]))).toBe(true);
  }, 60_000);

  it('fails, leaving the target as it was, when a source is no longer the version named', async () => {
    const before = Buffer.from('the object before');
    await put('target', before);
    const a = randomBytes(6 * MiB);
    const etag = await put('parts/moving', a);
    await put('parts/moving', randomBytes(6 * MiB)); // rewritten since its ETag was read
    await expect(
      composeObject(remote, 'target', [{ key: 'parts/moving', start: 0, end: a.length, etag }, { bytes: Buffer.from('x') }], S3_PART_RULES),
    ).rejects.toThrow(/parts\/moving changed while target was joined from it/);
    expect((await get('target')).bytes.equals(before)).toBe(true);
  }, 60_000);

  it('keeps its copies and uploads within --concurrency, both objects of a join within one limit', async () => {
    const proxy = await startProxy(server.endpoint, { delayMs: 30 });
    const narrow = await Remote.open({
      bucket,
      prefix: '',
      endpoint: proxy.endpoint,
      region: 'us-east-1',
      pathStyle: true,
      concurrency: 2,
    });
    try {
      const sources = await Promise.all(
        Array.from({ length: 6 }, async (_, i) => {
          const bytes = randomBytes(5 * MiB + i);
          return { key: `parts/many-${i}`, start: 0, end: bytes.length, etag: await put(`parts/many-${i}`, bytes) };
        }),
      );
      const limit = limitTo(2);
      const both = await Promise.all(
        ['many-a', 'many-b'].map((target) =>
          prepareComposition(narrow, target, [...sources, { bytes: Buffer.from('tail') }], S3_PART_RULES, { limit }),
        ),
      );
      await Promise.all(both.map((composition) => composition.complete()));
      const parts = proxy.log.filter((request) => request.method === 'PUT' && request.query.includes('partNumber='));
      expect(parts).toHaveLength(2 * 7);
      const inFlight = (at: number) => parts.filter((request) => request.startedAt <= at && at < request.endedAt).length;
      expect(Math.max(...parts.map((request) => inFlight(request.startedAt)))).toBe(2);
    } finally {
      narrow.close();
      await proxy.close();
    }
  }, 60_000);

  it('completes only over the version it names: another writer first, and its object stands (If-None-Match: *)', async () => {
    const a = randomBytes(6 * MiB);
    await put('parts/first', a);
    const source = [{ key: 'parts/first', start: 0, end: a.length }, { bytes: Buffer.from('tail') }];
    expect(await versionOf(remote, 'raced')).toBeUndefined();
    const prepared = await prepareComposition(remote, 'raced', source, S3_PART_RULES, { condition: unchangedSince(undefined) });
    const newer = Buffer.from('a newer join, completed first');
    await put('raced', newer);
    expect(await prepared.complete()).toBe('refused');
    expect((await get('raced')).bytes.equals(newer)).toBe(true);
    // Named as the version now there, the same composition completes.
    const again = await prepareComposition(remote, 'raced', source, S3_PART_RULES, {
      condition: unchangedSince(await versionOf(remote, 'raced')),
    });
    expect(await again.complete()).toMatchObject({ copiedParts: 1 });
    expect((await get('raced')).bytes.equals(Buffer.concat([a, Buffer.from('tail')]))).toBe(true);
  }, 60_000);
});
