/**
 * The AWS layer as committed in aws/: the CloudFront Function run as CloudFront runs it, in front of
 * a real S3-like server (s3rver) holding what the real `publish` wrote, with the template's custom
 * error responses, bucket policy and response headers policy (see ./cloudfront-sim.ts). Every row of
 * the request table; the function's code is ES 5.1 and within CloudFront's limits; its query
 * parsing reads CloudFront's event exactly as URLSearchParams reads the raw query; nothing but the
 * route table's objects ever reaches the bucket.
 */
import { parse } from 'acorn';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloudFrontQuery } from '../../src/hosting/hosts/cloudfront-handler.js';
import { FUNCTION_FILE, HEADERS_POLICY_FILE, TEMPLATE_FILE } from '../../src/hosting/hosts/aws-config.js';
import { hostCode } from '../../src/hosting/hosts/routing-source.js';
import { resolveRoute } from '../../src/hosting/routes/routing.js';
import { BOOKKEEPING_ATTEMPTS, CDN_PREFIX, publishSample, TABLE_KEY, type PublishedSample } from './cdn-fixture.js';
import { eventRequest, loadFunction, startCloudFrontSim, type CloudFrontSim } from './cloudfront-sim.js';
import { REPO, serveSnapshot } from './fixture.js';
import { CONTRACT, gzipNegotiationFailures, requestTable, send, tableFailures } from './request-table.js';

const ROWS = requestTable();
const FUNCTION_CODE = readFileSync(join(REPO, FUNCTION_FILE), 'utf8');
const TEMPLATE = JSON.parse(readFileSync(join(REPO, TEMPLATE_FILE), 'utf8'));
let sample: PublishedSample;
let sim: CloudFrontSim;
let origin: string;
let closeOrigin: () => Promise<void>;

beforeAll(async () => {
  sample = await publishSample();
  sim = await startCloudFrontSim({
    templatePath: join(REPO, TEMPLATE_FILE),
    s3: sample.s3.endpoint,
    bucket: sample.bucket,
    prefix: CDN_PREFIX,
  });
  ({ origin, close: closeOrigin } = await serveSnapshot(sample.snapshot.out));
}, 60_000);

afterAll(async () => {
  await sim?.close();
  await closeOrigin?.();
  await sample?.close();
});

/** Error documents the function renders carry the answer's time; the bucket's carry the snapshot's. */
const withoutTimestamp = (body: string) => body.replace(/"timestamp":"[^"]*"/, '"timestamp":"-"');

describe('the creators list, gzip, through CloudFront', () => {
  it('the function picks the gzip object for a viewer that accepts gzip, stored with Content-Encoding; Vary from the policy', async () => {
    const list = readFileSync(join(sample.snapshot.out, 'service-api/v1/creators'));
    expect(await gzipNegotiationFailures((method, target, headers) => send(sim.origin, method, target, headers), list)).toEqual([]);
    expect(sim.bucketKeys).toContain(`${CDN_PREFIX}/service-api/v1/.creators.gz`);
  });

  it('the cache policy keys on the normalised Accept-Encoding (CachingOptimized: gzip and brotli)', () => {
    const template = JSON.parse(readFileSync(join(REPO, TEMPLATE_FILE), 'utf8'));
    const behavior = template.Resources.Distribution.Properties.DistributionConfig.DefaultCacheBehavior;
    // AWS's managed CachingOptimized policy: EnableAcceptEncodingGzip and EnableAcceptEncodingBrotli on.
    expect(behavior.CachePolicyId).toBe('658327ea-f89d-4fab-a63d-7e88639e58f6');
  });
});

describe('the request table through CloudFront', () => {
  it('every row', async () => {
    expect(await tableFailures((row) => send(sim.origin, row.method, row.target), ROWS)).toEqual([]);
  });

  it('the same bodies as serve: byte for byte from the bucket, up to meta.timestamp when the function answers', async () => {
    const mismatches: string[] = [];
    let fromBucket = 0;
    for (const row of ROWS) {
      if ('outside' in row.expected || row.method !== 'GET') continue;
      const edge = await send(sim.origin, 'GET', row.target);
      const served = await send(origin, 'GET', row.target);
      if (edge.headers.etag !== undefined || 'user' in row.expected || 'creators' in row.expected) {
        fromBucket++;
        if (edge.body !== served.body) mismatches.push(row.target);
      } else if (withoutTimestamp(edge.body) !== withoutTimestamp(served.body)) {
        mismatches.push(row.target);
      }
    }
    expect(mismatches).toEqual([]);
    expect(fromBucket).toBeGreaterThan(100);
  });

  it("only the route table's objects reach the bucket, whatever the spelling", async () => {
    sim.bucketKeys.length = 0;
    for (const target of BOOKKEEPING_ATTEMPTS) {
      const answer = await send(sim.origin, 'GET', target);
      expect(answer.status, target).toBe(404);
      expect(answer.body, target).not.toContain('\u001f\u008b'); // the gzip magic of the tool's records
    }
    for (const row of ROWS) await send(sim.origin, row.method, row.target);
    expect(sim.bucketKeys.length).toBeGreaterThan(100);
    expect(sim.bucketKeys.filter((key) => !TABLE_KEY.test(key))).toEqual([]);
  });

  it('ETag and If-None-Match: 304 with the contract headers; never in place of an error', async () => {
    const first = await send(sim.origin, 'GET', '/api/v1/users/Alice');
    expect(first.status).toBe(200);
    expect(first.headers.etag).toMatch(/^"[0-9a-f]{32}"$/);
    const again = await send(sim.origin, 'GET', '/api/v1/users/alice', { 'If-None-Match': first.headers.etag! });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    for (const [name, value] of Object.entries(CONTRACT)) expect(again.headers[name], name).toBe(value);
    const missing = await send(sim.origin, 'GET', '/api/v1/users/nobody', { 'If-None-Match': '*' });
    expect(missing.status).toBe(404);
  });

  it("the bucket policy alone keeps the tool's records from CloudFront, should a request ever get past the function", () => {
    const statements = TEMPLATE.Resources.BucketPolicy.Properties.PolicyDocument.Statement;
    const deny = statements.find((s: { Effect: string }) => s.Effect === 'Deny');
    expect(JSON.stringify(deny.Resource)).toContain('/.profile-snapshot/*');
    expect(statements.some((s: { Action: string }) => s.Action === 's3:ListBucket')).toBe(false);
  });
});

describe('the CloudFront Function as committed', () => {
  it('is what the template deploys, with the committed headers policy', () => {
    const fn = TEMPLATE.Resources.ViewerRequestFunction.Properties;
    expect(fn.FunctionCode).toBe(FUNCTION_CODE);
    expect(fn.FunctionConfig.Runtime).toBe('cloudfront-js-2.0');
    expect(fn.AutoPublish).toBe(true);
    const policy = JSON.parse(readFileSync(join(REPO, HEADERS_POLICY_FILE), 'utf8'));
    const deployed = TEMPLATE.Resources.ContractHeaders.Properties.ResponseHeadersPolicyConfig;
    expect(deployed.CustomHeadersConfig.Items).toEqual(policy.CustomHeadersConfig.Items);
    expect(deployed.SecurityHeadersConfig).toEqual(policy.SecurityHeadersConfig);
    const distribution = TEMPLATE.Resources.Distribution.Properties.DistributionConfig;
    expect(distribution.DefaultCacheBehavior.FunctionAssociations).toEqual([
      { EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': ['ViewerRequestFunction', 'FunctionARN'] } },
    ]);
    expect(distribution.CacheBehaviors).toBeUndefined(); // every path runs the function
    expect(distribution.CustomErrorResponses.map((e: { ErrorCode: number }) => e.ErrorCode).sort()).toEqual([403, 404]);
  });

  it("is ES 5.1 and within CloudFront's 10 KB", () => {
    expect(() => parse(FUNCTION_CODE, { ecmaVersion: 5 })).not.toThrow();
    expect(Buffer.byteLength(FUNCTION_CODE)).toBeLessThanOrEqual(10 * 1024);
  });

  it('every host-code region of routing.js is ES 5.1, as its header promises, embedded here or not', () => {
    for (const region of ['routing', 'answers', 'conditional'])
      expect(() => parse(hostCode('../routes/routing.js', region), { ecmaVersion: 5 }), region).not.toThrow();
  });

  it("uses nothing of Node: a name the runtime lacks fails in the simulator's context", () => {
    const broken = loadFunction(
      `${FUNCTION_CODE}\nfunction handler(event) { return { statusCode: 200, headers: {}, body: String(typeof URLSearchParams + typeof require + typeof process + typeof Buffer + typeof fetch) }; }`,
    );
    expect(broken({ request: {} }).body).toBe('undefinedundefinedundefinedundefinedundefined');
  });

  const queryPart = (names: string[]) =>
    fc.constantFrom(...names, 'x', 'alice', 'ALICE', 'a%2Fb', '%41lice', '%zz', '%', '+', 'a+b', '', 'Dave_99', '..', '%C3%A9', '%C3');
  const rawQuery = (names: string[]) =>
    fc
      .array(fc.tuple(queryPart(names), fc.option(queryPart(names), { nil: undefined })), { maxLength: 5 })
      .map((pairs) => pairs.map(([k, v]) => (v === undefined ? k : `${k}=${v}`)).join('&'));
  const sameAsUrlSearchParams = (withRaw: boolean) => (raw: string, path: string) => {
    const request = eventRequest('GET', `${path}?${raw}`, {}, withRaw) as Parameters<typeof cloudFrontQuery>[0];
    expect(resolveRoute(path, cloudFrontQuery(request))).toEqual(resolveRoute(path, new URLSearchParams(raw)));
  };
  const PATHS = fc.constantFrom('/api/v1/users', '/api/v1/users/');

  it('reads the query exactly as URLSearchParams does from rawQueryString() (property)', () => {
    fc.assert(fc.property(rawQuery(['username', 'user%6Eame', 'USERNAME', 'user']), PATHS, sameAsUrlSearchParams(true)), { numRuns: 3000 });
  });

  it('and from the parsed query string when the name has one spelling (property)', () => {
    fc.assert(fc.property(rawQuery(['username', 'USERNAME', 'user']), PATHS, sameAsUrlSearchParams(false)), { numRuns: 3000 });
  });
});

describe('the request table through CloudFront without rawQueryString()', () => {
  it('every row', async () => {
    const older = await startCloudFrontSim({
      templatePath: join(REPO, TEMPLATE_FILE),
      s3: sample.s3.endpoint,
      bucket: sample.bucket,
      prefix: CDN_PREFIX,
      rawQueryString: false,
    });
    try {
      expect(await tableFailures((row) => send(older.origin, row.method, row.target), ROWS)).toEqual([]);
    } finally {
      await older.close();
    }
  });
});
