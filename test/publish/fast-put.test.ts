/**
 * The lean PutObject path (src/publish/bucket/fast-put.ts) puts on the wire exactly what the SDK's
 * PutObjectCommand puts there: for the same key, body, headers, credentials, region and clock, the
 * same URL, Host, and SigV4 signature, byte for byte. Both requests go through the same Remote (its
 * counting, fencing handler) to a local HTTP server that records them as they arrived. The SDK's
 * telemetry headers (user agent, invocation id, attempt count) are stripped before it signs: they
 * are not the object's, and a fresh invocation id per request would make every signature differ.
 * Then the failure side: retries as the SDK's strategy decides them, the fence before every attempt,
 * errors explained by Remote.failure.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Remote, type RemoteOptions } from '../../src/publish/bucket/client.js';
import { SnapshotError } from '../../src/core/errors.js';

interface Recorded {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

const TELEMETRY = ['user-agent', 'x-amz-user-agent', 'amz-sdk-invocation-id', 'amz-sdk-request'];
const KEYS = [
  'site/v1/api/v1/users/alice',
  'site/v1/with space/and  two',
  'site/v1/ünïcødé/名前',
  'site/v1/plus+equals=amp&q?hash#',
  "site/v1/it's (paren)*!~tilde",
  'site/v1/percent%2Fslash/%20',
  'trailing/slash/',
  // One character each that RFC 3986 escapes and a looser escaping would let through.
  'site/v1/bang!',
  'site/v1/star*',
  "site/v1/quote'",
  'site/v1/(paren)',
  'site/v1/colon:at@',
];
const SECRET = 'fast-put-secret/+=KEY';
const SESSION = 'FwoGZXIvYXdzEBYaDOPSESSION+token/with=chars';

let server: Server;
let port: number;
const recorded: Recorded[] = [];
/** Status codes to answer the next requests with (then 200). */
let answers: number[] = [];
const saved = { ...process.env };

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      recorded.push({ method: request.method!, url: request.url!, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      // No Date header: it would move the clock-skew offset both paths sign with.
      response.sendDate = false;
      const status = answers.shift() ?? 200;
      if (status === 200) {
        response.writeHead(200, { etag: '"x"' }).end();
      } else {
        const code = status === 403 ? 'AccessDenied' : status === 503 ? 'SlowDown' : 'InternalError';
        response.writeHead(status, { 'content-type': 'application/xml' });
        response.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>injected ${status}</Message></Error>`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
});

afterAll(async () => {
  process.env = saved;
  await new Promise((resolve) => server.close(resolve));
});

afterEach(() => {
  vi.useRealTimers();
  recorded.length = 0;
  answers = [];
});

function credentials(session: boolean) {
  process.env.AWS_ACCESS_KEY_ID = 'AKIDFASTPUT';
  process.env.AWS_SECRET_ACCESS_KEY = SECRET;
  if (session) process.env.AWS_SESSION_TOKEN = SESSION;
  else delete process.env.AWS_SESSION_TOKEN;
}

/** A Remote whose SDK client signs without its telemetry headers, and sends virtual-hosted requests to 127.0.0.1 too. */
/** Runs `use` with a Remote for these options (remoteFor's), closed afterwards. */
async function withRemote(args: Parameters<typeof remoteFor>, use: (remote: Remote) => Promise<void>): Promise<void> {
  const remote = remoteFor(...args);
  try {
    await use(remote);
  } finally {
    remote.close();
  }
}

function remoteFor(options: Partial<RemoteOptions>, region = 'us-east-1'): Remote {
  const remote = new Remote({ bucket: 'profiles', prefix: '', concurrency: 1, maxAttempts: 3, ...options }, region);
  // A finalizeRequest middleware (typed loosely: the SDK's own types are a package of their own).
  const strip = (next: (args: { request: unknown }) => Promise<unknown>) => (args: { request: unknown }) => {
    const headers = (args.request as { headers: Record<string, string> }).headers;
    for (const name of TELEMETRY) delete headers[name];
    return next(args);
  };
  remote.client.middlewareStack.addRelativeTo(strip as never, {
    relation: 'before',
    toMiddleware: 'httpSigningMiddleware',
    name: 'testStripTelemetry',
  });
  // A virtual-hosted bucket's host (profiles.localhost) may not resolve here: connect to 127.0.0.1,
  // keeping the request (and its signed Host header) exactly as built.
  const handler = remote.client.config.requestHandler as unknown as { handle: (request: { hostname: string }) => Promise<unknown> };
  const handle = handler.handle.bind(handler);
  handler.handle = (request) =>
    handle(Object.assign(Object.create(Object.getPrototypeOf(request) as object) as object, request, { hostname: '127.0.0.1' }));
  return remote;
}

const sdkPut = (remote: Remote, key: string, body: string, gzip: boolean) =>
  remote.client.send(
    new PutObjectCommand({
      Bucket: remote.options.bucket,
      Key: key,
      Body: Buffer.from(body),
      ContentType: 'application/json; charset=utf-8',
      CacheControl: 'public, s-maxage=30, stale-while-revalidate=60',
      ...(gzip ? { ContentEncoding: 'gzip' } : {}),
    }),
  );

const fastPut = (remote: Remote, key: string, body: string, gzip: boolean) =>
  remote.fastPut.put(
    key,
    Buffer.from(body),
    {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'public, s-maxage=30, stale-while-revalidate=60',
      ...(gzip ? { 'content-encoding': 'gzip' } : {}),
    },
    `upload ${key}`,
  );

/** Every header but the SDK's telemetry and the connection's own. */
const objectHeaders = (headers: IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !TELEMETRY.includes(name) && name !== 'connection'));

describe('the lean PutObject path signs exactly as the SDK', () => {
  const cases = [
    {
      name: 'path-style (an IP endpoint)',
      endpoint: () => `http://127.0.0.1:${port}`,
      pathStyle: false,
      session: false,
      region: 'us-east-1',
    },
    { name: 'path-style (--path-style)', endpoint: () => `http://localhost:${port}`, pathStyle: true, session: true, region: 'eu-west-1' },
    { name: 'virtual-hosted', endpoint: () => `http://localhost:${port}`, pathStyle: false, session: false, region: 'auto' },
    {
      name: 'virtual-hosted, session token',
      endpoint: () => `http://localhost:${port}`,
      pathStyle: false,
      session: true,
      region: 'us-east-1',
    },
    {
      name: 'path-style under an endpoint path',
      endpoint: () => `http://localhost:${port}/base`,
      pathStyle: true,
      session: true,
      region: 'us-east-1',
    },
  ];

  for (const c of cases) {
    it(c.name, async () => {
      credentials(c.session);
      vi.useFakeTimers({ toFake: ['Date'], now: new Date('2026-11-25T10:02:11.000Z') });
      let first: { host?: string | undefined; url?: string | undefined; token?: string | string[] | undefined } | undefined;
      await withRemote([{ endpoint: c.endpoint(), pathStyle: c.pathStyle }, c.region], async (remote) => {
        for (const [i, key] of KEYS.entries()) {
          const body = `{"n":${i},"text":"ü ${key}"}`;
          const gzip = i % 3 === 2;
          await sdkPut(remote, key, body, gzip);
          await fastPut(remote, key, body, gzip);
          const [sdk, fast] = recorded.splice(0, 2);
          first ??= { host: sdk?.headers.host, url: sdk?.url, token: sdk?.headers['x-amz-security-token'] };
          expect(sdk, key).toBeDefined();
          expect(fast, key).toBeDefined();
          expect(fast!.method).toBe('PUT');
          // The parts a signature covers, one by one (clearer failures), then every header.
          expect(fast!.url, key).toBe(sdk!.url);
          expect(fast!.headers.host, key).toBe(sdk!.headers.host);
          expect(fast!.headers['x-amz-date'], key).toBe(sdk!.headers['x-amz-date']);
          expect(fast!.headers['x-amz-content-sha256'], key).toBe(sdk!.headers['x-amz-content-sha256']);
          expect(fast!.headers['x-amz-security-token'], key).toBe(sdk!.headers['x-amz-security-token']);
          expect(fast!.headers.authorization, key).toBe(sdk!.headers.authorization);
          expect(objectHeaders(fast!.headers), key).toEqual(objectHeaders(sdk!.headers));
          expect(fast!.body).toBe(body);
        }
        // What the cases are about: the bucket in the host exactly when the SDK goes virtual-hosted.
        const { host, url } = first!;
        if (c.name.startsWith('virtual'))
          expect([host, url]).toEqual([`profiles.localhost:${port}`, '/site/v1/api/v1/users/alice?x-id=PutObject']);
        else expect(url).toBe(`${c.endpoint().includes('/base') ? '/base' : ''}/profiles/site/v1/api/v1/users/alice?x-id=PutObject`);
        if (c.session) expect(first!.token).toBe(SESSION);
        expect(remote.counts.PUT).toBe(KEYS.length * 2);
      });
    });
  }

  it('writes no credential anywhere but the signature and the session token header', async () => {
    credentials(true);
    await withRemote([{ endpoint: `http://127.0.0.1:${port}` }], async (remote) => {
      await fastPut(remote, 'site/v1/x', '{}', false);
      const [request] = recorded;
      const text = JSON.stringify(request);
      expect(text).not.toContain(SECRET);
      expect(text.split(SESSION).length - 1).toBe(1); // the x-amz-security-token header only
    });
  });
});

describe('the lean PutObject path fails as the SDK does', () => {
  it('retries 5xx and throttling answers up to the attempts allowed, counting them', async () => {
    credentials(false);
    await withRemote([{ endpoint: `http://127.0.0.1:${port}`, maxAttempts: 3 }], async (remote) => {
      answers = [503, 500];
      await fastPut(remote, 'site/v1/retried', '{}', false);
      expect(remote.retries).toBe(2);
      expect(remote.counts.PUT).toBe(3);
      // Each attempt is signed afresh, and sent whole.
      expect(new Set(recorded.map((r) => r.body))).toEqual(new Set(['{}']));

      answers = [503, 503, 503];
      const error = await fastPut(remote, 'site/v1/exhausted', '{}', false).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SnapshotError);
      expect((error as SnapshotError).exitCode).toBe(6);
      expect((error as Error).message).toMatch(
        /cannot upload site\/v1\/exhausted .*the server kept failing \(HTTP 503 SlowDown\) after 3 attempts/,
      );
      expect(remote.retries).toBe(4);
    });
  });

  it('does not retry an access denied, and explains it', async () => {
    credentials(false);
    await withRemote([{ endpoint: `http://127.0.0.1:${port}` }], async (remote) => {
      answers = [403];
      const error = await fastPut(remote, 'site/v1/denied', '{}', false).catch((e: unknown) => e);
      expect((error as Error).message).toMatch(/access denied \(AccessDenied\)/);
      expect(remote.counts.PUT).toBe(1);
      expect(remote.retries).toBe(0);
    });
  });

  it('checks the fence before every attempt: a lost lease stops the retries, and is what is reported', async () => {
    credentials(false);
    await withRemote([{ endpoint: `http://127.0.0.1:${port}`, maxAttempts: 5 }], async (remote) => {
      let attempts = 0;
      const lost = new SnapshotError('prefixHeld', 'the lease was lost');
      remote.fence = () => {
        if (++attempts === 2) throw lost;
      };
      answers = [503, 503, 503];
      const error = await fastPut(remote, 'site/v1/fenced', '{}', false).catch((e: unknown) => e);
      expect(error).toBe(lost);
      expect(recorded).toHaveLength(1); // the second attempt never reached the socket
      expect(remote.counts.PUT).toBe(1);
    });
  });
});
