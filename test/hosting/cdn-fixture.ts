/**
 * The sample snapshot as the object-storage CDNs see it: built by the real generator, published by
 * the real `publish` into s3rver under a key prefix (the tool's `.profile-snapshot/` records
 * included), and from there copied object by object into the R2 bucket of a Worker running in
 * workerd (miniflare), so both CDN layers read exactly the bucket `publish` writes.
 */
import { Miniflare } from 'miniflare';
import { dirname, join } from 'node:path';
import { publish } from '../../src/publish/publish.js';
import { BUCKET_BINDING, COMPATIBILITY_DATE, WORKER_MODULE } from '../../src/hosting/hosts/cloudflare-config.js';
import { CREDENTIALS, readBucket, startS3rver, type S3Server, type StoredObject } from '../helpers/s3.js';
import { buildSampleSnapshot, REPO, type Snapshot } from './fixture.js';

export const CDN_PREFIX = 'live/v1';

/** The only keys a CDN layer may read: a canonical profile under an alias, a file of the table, an error document. */
export const TABLE_KEY =
  /^live\/v1\/((api|service-api)\/v1\/users\/[a-z0-9_-][a-z0-9._-]{0,63}|service-api\/v1\/creators|api\/v1\/openapi\.json|_errors\/[a-z-]+\.json)$/;

/** Ways to spell the tool's own records in the bucket (`<prefix>/.profile-snapshot/`); each must be a 404. */
export const BOOKKEEPING_ATTEMPTS = [
  '/.profile-snapshot/remote-state',
  `/${CDN_PREFIX}/.profile-snapshot/remote-state`,
  '/api/v1/users/..%2F..%2F..%2F.profile-snapshot%2Fremote-state',
  '/api/v1/users?username=..%2F..%2F.profile-snapshot%2Fremote-intent',
  '/api/v1/users/%2e%2e/%2e%2e/.profile-snapshot/remote-state',
  '/api/v1/..%2f..%2f.profile-snapshot/remote-state',
  '/service-api/v1/users/.profile-snapshot',
  '/api/v1/users/%252e%252e%252f.profile-snapshot',
  '/_errors/../.profile-snapshot/remote-state',
  '/api/v1/users/ALICE%00',
  `/api/v1/users/${'A'.repeat(8000)}`,
];

export interface PublishedSample {
  snapshot: Snapshot;
  s3: S3Server;
  bucket: string;
  /** Every object of the bucket by full key. */
  objects: Map<string, StoredObject>;
  close(): Promise<void>;
}

export async function publishSample(): Promise<PublishedSample> {
  const snapshot = buildSampleSnapshot();
  const s3 = await startS3rver();
  const bucket = await s3.bucket();
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  process.env.AWS_ACCESS_KEY_ID = CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = CREDENTIALS.secretAccessKey;
  await publish({
    singleWriter: true, // s3rver ignores conditional writes
    out: snapshot.out,
    remote: { bucket, prefix: CDN_PREFIX, endpoint: s3.endpoint, region: 'us-east-1', pathStyle: true, concurrency: 8 },
  });
  const objects = await readBucket(s3.endpoint, bucket);
  return {
    snapshot,
    s3,
    bucket,
    objects,
    close: async () => {
      await s3.close();
      snapshot.cleanup();
    },
  };
}

export interface WorkerHost {
  /** http://127.0.0.1:<port> of workerd's own HTTP server. */
  origin: string;
  mf: Miniflare;
  close(): Promise<void>;
}

export interface WorkerVars {
  PREFIX?: string;
  CACHE?: string;
  OUTSIDE?: string;
}

/**
 * A module in front of the committed Worker, for tests only: it hands the Worker its bucket through
 * a recorder of every key read, and answers `/__test/keys` with the keys read since the last call.
 */
const RECORDER = `import worker from './worker.js';
const keys = [];
const recorded = (bucket) => ({
  get: (key, options) => { keys.push(key); return bucket.get(key, options); },
  head: (key) => { keys.push(key); return bucket.head(key); },
});
export default {
  fetch(request, env, ctx) {
    if (new URL(request.url).pathname === '/__test/keys') return Response.json(keys.splice(0));
    return worker.fetch(request, { ...env, PROFILES: recorded(env.PROFILES) }, ctx);
  },
};
`;

/** The keys the Worker read from R2 since the last call (only with `recordKeys`). */
export async function readKeys(host: WorkerHost): Promise<string[]> {
  return (await fetch(`${host.origin}/__test/keys`)).json() as Promise<string[]>;
}

/**
 * The committed cloudflare/worker.js in workerd with a local R2 bucket holding `objects` (by full
 * key, with their stored headers). `outbound` answers the Worker's own fetches (OUTSIDE = origin).
 */
export async function startWorker(
  objects: Map<string, StoredObject>,
  vars: WorkerVars = { PREFIX: CDN_PREFIX },
  options: { outbound?: (request: Request) => Response | Promise<Response>; recordKeys?: boolean } = {},
): Promise<WorkerHost> {
  const worker = join(REPO, WORKER_MODULE);
  const code = options.recordKeys
    ? {
        modules: [
          { type: 'ESModule' as const, path: join(dirname(worker), 'test-recorder.js'), contents: RECORDER },
          { type: 'ESModule' as const, path: worker },
        ],
      }
    : { modules: true, scriptPath: worker };
  const mf = new Miniflare({
    ...code,
    compatibilityDate: COMPATIBILITY_DATE,
    r2Buckets: [BUCKET_BINDING],
    bindings: { ...vars },
    host: '127.0.0.1',
    port: 0,
    // The request's `cf` object from a placeholder: miniflare would otherwise fetch one from the internet.
    cf: false,
    ...(options.outbound ? { outboundService: options.outbound } : {}),
  });
  const url = await mf.ready;
  const host = { origin: url.origin, mf, close: () => mf.dispose() };
  for (const [key, object] of objects) await putObject(host, key, object);
  return host;
}

/** The Worker's R2 bucket, as much of it as the tests use. */
interface TestBucket {
  put(
    key: string,
    value: Uint8Array,
    options: { httpMetadata: { contentType?: string; cacheControl?: string; contentEncoding?: string } },
  ): Promise<unknown>;
  delete(key: string): Promise<void>;
}
const bucketOf = async (host: WorkerHost) => (await host.mf.getR2Bucket(BUCKET_BINDING)) as unknown as TestBucket;

/** Puts one object with its stored headers (a fresh Uint8Array: miniflare refuses a pooled Buffer). */
export async function putObject(host: WorkerHost, key: string, object: StoredObject): Promise<void> {
  await (
    await bucketOf(host)
  ).put(key, new Uint8Array(Buffer.from(object.bytes, 'latin1')), {
    httpMetadata: { contentType: object.contentType, cacheControl: object.cacheControl, contentEncoding: object.contentEncoding },
  });
}

export async function deleteObject(host: WorkerHost, key: string): Promise<void> {
  await (await bucketOf(host)).delete(key);
}
