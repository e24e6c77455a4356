/**
 * The Cloudflare Worker (cloudflare/worker.js, as committed) in workerd, Cloudflare's open-source
 * Workers runtime, through miniflare, over real HTTP, reading an R2 bucket that holds exactly what
 * the real `publish` wrote. Every row of the request table, with the cache on and off; then what the
 * table does not cover: ETag / If-None-Match, the bookkeeping keys under every spelling, paths
 * outside the API, a bucket without a prefix, and a bucket that lost its error documents.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorAnswerBody } from '../../src/hosting/routes/routing.js';
import { serveSnapshot } from './fixture.js';
import {
  BOOKKEEPING_ATTEMPTS,
  CDN_PREFIX,
  deleteObject,
  publishSample,
  putObject,
  readKeys,
  startWorker,
  TABLE_KEY,
  type PublishedSample,
  type WorkerHost,
} from './cdn-fixture.js';
import { CONTRACT, gzipNegotiationFailures, requestTable, send, tableFailures } from './request-table.js';

const ROWS = requestTable();
let sample: PublishedSample;
let cached: WorkerHost;
let uncached: WorkerHost;
let origin: string;
let closeOrigin: () => Promise<void>;

beforeAll(async () => {
  sample = await publishSample();
  cached = await startWorker(sample.objects, { PREFIX: CDN_PREFIX }, { recordKeys: true });
  uncached = await startWorker(sample.objects, { PREFIX: `/${CDN_PREFIX}/`, CACHE: 'off' });
  ({ origin, close: closeOrigin } = await serveSnapshot(sample.snapshot.out));
}, 60_000);

afterAll(async () => {
  await cached?.close();
  await uncached?.close();
  await closeOrigin?.();
  await sample?.close();
});

async function runTable(host: string): Promise<void> {
  expect(await tableFailures((row) => send(host, row.method, row.target), ROWS)).toEqual([]);
}

describe('the creators list, gzip, in workerd', () => {
  it('passes the stored gzip variant through as it is to a client that accepts gzip, the list to others, cache on and off', async () => {
    const list = readFileSync(join(sample.snapshot.out, 'service-api/v1/creators'));
    for (const host of [cached, uncached, cached]) {
      expect(await gzipNegotiationFailures((method, target, headers) => send(host.origin, method, target, headers), list)).toEqual([]);
    }
  });
});

describe('the request table in workerd', () => {
  it('every row, the edge cache on (twice: filling it, then from it)', async () => {
    await runTable(cached.origin);
    await runTable(cached.origin);
  });

  it('every row, the edge cache off, with the prefix spelled with slashes', async () => {
    await runTable(uncached.origin);
  });

  it('the same bodies as serve for every JSON row read from the bucket', async () => {
    const mismatches: string[] = [];
    for (const row of ROWS) {
      if ('outside' in row.expected || row.method !== 'GET') continue;
      const worker = await send(cached.origin, 'GET', row.target);
      const served = await send(origin, 'GET', row.target);
      if (worker.body !== served.body) mismatches.push(row.target);
    }
    expect(mismatches).toEqual([]);
  });
});

/** The objects with the prefix taken off their keys (a bucket published without a prefix). */
const unprefixed = (objects: PublishedSample['objects']) =>
  new Map([...objects].map(([key, object]) => [key.slice(CDN_PREFIX.length + 1), object]));

describe('what the table does not cover, in workerd', () => {
  it("only the route table's keys are read, whatever the spelling", async () => {
    await readKeys(cached);
    for (const target of BOOKKEEPING_ATTEMPTS) {
      const answer = await send(cached.origin, 'GET', target);
      expect(answer.status, target).toBe(404);
      expect(answer.body, target).not.toContain('\u001f\u008b'); // the gzip magic of the tool's records
    }
    await runTable(cached.origin);
    const keys = await readKeys(cached);
    expect(keys.length).toBeGreaterThan(20);
    expect(keys.filter((key) => !TABLE_KEY.test(key))).toEqual([]);
  });

  it('ETag and If-None-Match: 304 with every contract header, from R2 and from the cache; never in place of an error', async () => {
    for (const host of [uncached, cached, cached]) {
      const first = await send(host.origin, 'GET', '/api/v1/users/Alice');
      expect(first.status).toBe(200);
      expect(first.headers.etag).toMatch(/^"[0-9a-f]+"$/);
      for (const tag of [first.headers.etag!, `W/${first.headers.etag}`, `"other", ${first.headers.etag}`, '*']) {
        const again = await send(host.origin, 'GET', '/service-api/v1/users/ALICE', { 'If-None-Match': tag });
        expect(again.status, tag).toBe(304);
        expect(again.body).toBe('');
        for (const [name, value] of Object.entries(CONTRACT)) expect(again.headers[name], name).toBe(value);
      }
      expect((await send(host.origin, 'GET', '/api/v1/users/alice', { 'If-None-Match': '"other"' })).status).toBe(200);
      // The origin's rule, embedded as written: any tag of a well-formed list matches, a malformed value never does.
      const etag = first.headers.etag!;
      for (const tag of [`"x",W/${etag}`, `W/"x" ,\t ${etag}`, `, ${etag},`])
        expect((await send(host.origin, 'GET', '/api/v1/users/alice', { 'If-None-Match': tag })).status, tag).toBe(304);
      for (const tag of [`"x", W/"y"`, etag.slice(1, -1), `${etag} ${etag}`, `${etag}, x`, `*, ${etag}`, `w/${etag}`])
        expect((await send(host.origin, 'GET', '/api/v1/users/alice', { 'If-None-Match': tag })).status, tag).toBe(200);
      const head = await send(host.origin, 'HEAD', '/api/v1/users/alice');
      expect(head.headers.etag).toBe(first.headers.etag);
      const missing = await send(host.origin, 'GET', '/api/v1/users/nobody', { 'If-None-Match': '*' });
      expect(missing.status).toBe(404);
      expect(JSON.parse(missing.body).error.code).toBe('USER_NOT_FOUND');
    }
  });

  it('the cache keeps a document read once; with CACHE = "off" every request reads R2', async () => {
    for (const host of [cached, uncached]) await send(host.origin, 'GET', '/api/v1/users/carol.dev');
    const key = `${CDN_PREFIX}/api/v1/users/carol.dev`;
    for (const host of [cached, uncached]) await deleteObject(host, key);
    try {
      expect((await send(cached.origin, 'GET', '/api/v1/users/Carol.Dev')).status).toBe(200);
      expect((await send(uncached.origin, 'GET', '/api/v1/users/Carol.Dev')).status).toBe(404);
    } finally {
      for (const host of [cached, uncached]) await putObject(host, key, sample.objects.get(key)!);
    }
  });

  it("a change in the bucket shows within the contract's s-maxage (30 s), cache or not", async () => {
    const key = `${CDN_PREFIX}/api/v1/users/amy.lee`;
    const filled = Date.now();
    expect((await send(cached.origin, 'GET', '/api/v1/users/amy.lee')).status).toBe(200);
    await deleteObject(cached, key);
    try {
      expect((await send(cached.origin, 'GET', '/api/v1/users/Amy.Lee')).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, filled + 31_000 - Date.now()));
      const later = await send(cached.origin, 'GET', '/api/v1/users/Amy.Lee');
      expect(later.status).toBe(404);
      expect(JSON.parse(later.body).error.code).toBe('USER_NOT_FOUND');
    } finally {
      await putObject(cached, key, sample.objects.get(key)!);
    }
  }, 60_000);

  it('paths that are not the API\'s: a plain 404 by default, the zone\'s origin with OUTSIDE = "origin"', async () => {
    const plain = await send(cached.origin, 'GET', '/api/avatar?u=alice');
    expect(plain.status).toBe(404);
    expect(plain.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(plain.headers['x-content-type-options']).toBe('nosniff');
    const seen: string[] = [];
    const passing = await startWorker(
      new Map(),
      { PREFIX: CDN_PREFIX, OUTSIDE: 'origin' },
      {
        outbound: (request) => {
          seen.push(`${request.method} ${new URL(request.url).pathname}${new URL(request.url).search}`);
          return new Response('the avatar service', { status: 200, headers: { 'content-type': 'image/png' } });
        },
      },
    );
    try {
      const passed = await send(passing.origin, 'GET', '/api/avatar?u=alice');
      expect(passed.status).toBe(200);
      expect(passed.body).toBe('the avatar service');
      expect((await send(passing.origin, 'POST', '/api/decoration?f=halo')).body).toBe('the avatar service');
      expect(seen).toEqual(['GET /api/avatar?u=alice', 'POST /api/decoration?f=halo']);
    } finally {
      await passing.close();
    }
  });

  it('a bucket published without a prefix, and one that lost its error documents', async () => {
    const bare = await startWorker(unprefixed(sample.objects), {});
    const lost = await startWorker(new Map([...sample.objects].filter(([key]) => !key.includes('/_errors/'))), { PREFIX: CDN_PREFIX });
    try {
      await runTable(bare.origin);
      const before = Date.now();
      const missing = await send(lost.origin, 'GET', '/api/v1/users/nobody');
      expect(missing.status).toBe(404);
      for (const [name, value] of Object.entries(CONTRACT)) expect(missing.headers[name], name).toBe(value);
      const timestamp = JSON.parse(missing.body).meta.timestamp as string;
      expect(Date.parse(timestamp)).toBeGreaterThanOrEqual(before - 1000);
      expect(missing.body).toBe(errorAnswerBody('USER_NOT_FOUND', timestamp));
      expect((await send(lost.origin, 'POST', '/api/v1/users/alice')).headers.allow).toBe('GET, HEAD, OPTIONS');
    } finally {
      await bare.close();
      await lost.close();
    }
  });
});
