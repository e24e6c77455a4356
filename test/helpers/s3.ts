/**
 * Real S3 servers for tests, on 127.0.0.1 at ports chosen at run time: `s3rver` in-process always,
 * and `moto_server` (Python) when it is installed. Plus a proxy in front of either that can slow,
 * fail or cut requests and logs them, and an async runner for the CLI (the server lives in this
 * process, so the CLI must not block it).
 */
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { createServer as netServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { toolsPresent } from './tools.js';
import { inPool } from '../../src/publish/bucket/pool.js';

export const BUCKET = 'profiles';
export const CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface S3Server {
  name: string;
  endpoint: string;
  /** Makes a new empty bucket, for one test. */
  bucket(): Promise<string>;
  close(): Promise<void>;
}

let buckets = 0;
const nextBucket = () => `${BUCKET}-${process.pid}-${++buckets}`;

export async function startS3rver(): Promise<S3Server> {
  const directory = mkdtempSync(join(tmpdir(), 'ps-s3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', directory, silent: true });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    name: 's3rver',
    endpoint,
    bucket: () => createBucket(endpoint),
    close: async () => {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

// CI's machines have moto_server: there, the tests that need a store honouring conditional writes
// must run, never be skipped (.ci/run sets PROFILE_SNAPSHOT_REQUIRE_MOTO).
export const hasMoto = toolsPresent({ moto_server: ['--help'] }, 'PROFILE_SNAPSHOT_REQUIRE_MOTO', 'pip install "moto[server]"');

export async function startMoto(): Promise<S3Server> {
  const port = await freePort();
  const child = spawn('moto_server', ['-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  const endpoint = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      await fetch(`${endpoint}/`);
      break;
    } catch {
      if (i > 200 || child.exitCode !== null) throw new Error('moto_server did not start');
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    name: 'moto',
    endpoint,
    bucket: () => createBucket(endpoint),
    close: async () => {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

async function createBucket(endpoint: string): Promise<string> {
  const bucket = nextBucket();
  const client = clientFor(endpoint);
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  client.destroy();
  return bucket;
}

export function clientFor(endpoint: string): S3Client {
  return new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: CREDENTIALS,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

export interface StoredObject {
  bytes: string;
  contentType: string | undefined;
  cacheControl: string | undefined;
  contentEncoding: string | undefined;
}

/** Reads in flight when reading a bucket back: serial reads of a tree of shards took seconds. */
const READ_LANES = 8;

/** Every object under the prefix (or those `wanted`), by key relative to it, with its bytes and stored headers. */
export async function readBucket(
  endpoint: string,
  bucket: string,
  prefix = '',
  wanted: (key: string) => boolean = () => true,
): Promise<Map<string, StoredObject>> {
  const client = clientFor(endpoint);
  const start = prefix === '' ? '' : `${prefix}/`;
  const objects = new Map<string, StoredObject>();
  let token: string | undefined;
  const keys: string[] = [];
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: start, ContinuationToken: token }));
    for (const { Key } of page.Contents ?? []) if (wanted(Key!.slice(start.length))) keys.push(Key!);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  const read = async (key: string): Promise<StoredObject> => {
    const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return {
      bytes: Buffer.from(await object.Body!.transformToByteArray()).toString('latin1'),
      contentType: object.ContentType,
      cacheControl: object.CacheControl,
      contentEncoding: object.ContentEncoding,
    };
  };
  const bodies = new Map<string, StoredObject>();
  await inPool(keys, READ_LANES, async (key) => void bodies.set(key, await read(key)));
  // The map keeps the listing's order, whichever read ends first.
  for (const key of keys) objects.set(key.slice(start.length), bodies.get(key)!);
  client.destroy();
  return objects;
}

/** The environment of a publish: test credentials, and nothing from the machine's AWS setup. */
export function s3Env(extra: Record<string, string> = {}): Record<string, string> {
  return {
    HOME: '/nonexistent',
    AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
    AWS_CONFIG_FILE: '/nonexistent/aws-config',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/aws-credentials',
    AWS_EC2_METADATA_DISABLED: 'true',
    ...extra,
  };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = netServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface ProxiedRequest {
  method: string;
  path: string;
  query: string;
  status: number;
  startedAt: number;
  endedAt: number;
}

export interface ProxyOptions {
  /** Added before each request is forwarded. */
  delayMs?: number;
  /** Decides a fault per request (n counts from 1): answer 503, cut the connection, or stall. */
  fault?: (n: number, method: string, path: string, query: string) => 'status503' | 'reset' | 'slow' | undefined;
  /** false: answers without Date and Last-Modified headers (a store whose clock the client cannot read). */
  dates?: boolean;
}

/**
 * A proxy that forwards a request only once its whole body has arrived, so a client killed mid-upload
 * never leaves a partly written object behind it (s3rver writes objects in place, unlike S3).
 */
export async function startProxy(
  target: string,
  options: ProxyOptions = {},
): Promise<{ endpoint: string; log: ProxiedRequest[]; faults: number; close: () => Promise<void> }> {
  const upstream = new URL(target);
  const log: ProxiedRequest[] = [];
  const state = { n: 0, faults: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    const startedAt = performance.now();
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const n = ++state.n;
      const url = new URL(req.url ?? '/', 'http://x');
      const fault = options.fault?.(n, req.method ?? '', url.pathname, url.search);
      if (fault) state.faults++;
      if (fault === 'reset') return req.socket.destroy();
      if (fault === 'status503') {
        res.writeHead(503, { 'Content-Type': 'application/xml' });
        return res.end('<?xml version="1.0"?><Error><Code>SlowDown</Code><Message>injected</Message></Error>');
      }
      if (options.delayMs) await new Promise((r) => setTimeout(r, options.delayMs));
      if (fault === 'slow') await new Promise((r) => setTimeout(r, 1500));
      const forward = httpRequest(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          if (options.dates === false) {
            res.sendDate = false;
            delete answer.headers.date;
            delete answer.headers['last-modified'];
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          answer.on('end', () =>
            log.push({
              method: req.method ?? '',
              path: decodeURIComponent(url.pathname),
              query: url.search,
              status: answer.statusCode ?? 0,
              startedAt,
              endedAt: performance.now(),
            }),
          );
        },
      );
      forward.on('error', () => res.destroy());
      forward.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    log,
    get faults() {
      return state.faults;
    },
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
