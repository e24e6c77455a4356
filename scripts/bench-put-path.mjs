/**
 * What one small PutObject costs the publisher's CPU, by the way it is sent: the AWS SDK's S3Client
 * set up as src/publish/client.ts does, the same with `cacheMiddleware: true`, and a lean path (the
 * SDK's own SigV4 signer and HTTP handler, without the middleware stack). Each sends --count PUTs of a
 * ~2 KB body (a profile's size) at --concurrency into bench-s3-memory.mjs (25 ms per answer), in this
 * process, and reports wall seconds, PUTs/s and CPU microseconds per PUT. For the proposals of
 * bench-publish-1m.mjs: how much faster the cold publish's upload loop could go on one core.
 *
 *   node scripts/bench-put-path.mjs [--count 20000] [--concurrency 64] [--delay-ms 25]
 */
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { HttpRequest } from '@smithy/core/transport';
import { SignatureV4 } from '@smithy/signature-v4';
import { fork } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const COUNT = Number(value('--count', '20000'));
const CONCURRENCY = Number(value('--concurrency', '64'));
const DELAY = value('--delay-ms', '25');
const ONLY = value('--only', undefined);
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const server = fork(join(repo, 'scripts/bench-s3-memory.mjs'), ['--delay-ms', DELAY], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
const port = await new Promise((resolve) => server.stdout.once('data', (d) => resolve(JSON.parse(String(d)).port)));
const endpoint = `http://127.0.0.1:${port}`;
const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
const body = Buffer.from(JSON.stringify({ data: 'x'.repeat(2200) }));
const HEADERS = { ContentType: 'application/json; charset=utf-8', CacheControl: 'public, s-maxage=30, stale-while-revalidate=60' };

function sdkClient(extra) {
  return new S3Client({
    region: 'us-east-1',
    endpoint,
    credentials,
    forcePathStyle: false,
    maxAttempts: 6,
    retryMode: 'standard',
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: new NodeHttpHandler({ httpAgent: new Agent({ keepAlive: true, maxSockets: Infinity }), requestTimeout: 120_000 }),
    ...extra,
  });
}

function viaSdk(extra) {
  const client = sdkClient(extra);
  return {
    put: (key) => client.send(new PutObjectCommand({ Bucket: 'bench', Key: key, Body: body, ...HEADERS })),
    close: () => client.destroy(),
  };
}

const bytes = (data) =>
  typeof data === 'string'
    ? Buffer.from(data, 'utf8')
    : ArrayBuffer.isView(data)
      ? Buffer.from(data.buffer, data.byteOffset, data.byteLength)
      : Buffer.from(data);

/** SHA-256, or HMAC-SHA-256 with a secret, as the signer wants it (what @smithy/hash-node does). */
class Sha256 {
  constructor(secret) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data) {
    this.hash.update(bytes(data));
  }
  digest() {
    return Promise.resolve(new Uint8Array(this.hash.digest()));
  }
}

/** The lean path: sign with the SDK's SigV4 signer, send with its HTTP handler; no middleware stack, no retries here. */
function viaSigner() {
  const handler = new NodeHttpHandler({ httpAgent: new Agent({ keepAlive: true, maxSockets: Infinity }), requestTimeout: 120_000 });
  const signer = new SignatureV4({
    credentials,
    region: 'us-east-1',
    service: 's3',
    sha256: Sha256,
    uriEscapePath: false,
    applyChecksum: false,
  });
  const url = new URL(endpoint);
  const put = async (key) => {
    const request = new HttpRequest({
      method: 'PUT',
      protocol: url.protocol,
      hostname: url.hostname,
      port: Number(url.port),
      path: `/bench/${key.split('/').map(encodeURIComponent).join('/')}`,
      headers: {
        host: url.host,
        'content-type': HEADERS.ContentType,
        'cache-control': HEADERS.CacheControl,
        'content-length': String(body.length),
        'x-amz-content-sha256': createHash('sha256').update(body).digest('hex'),
      },
      body,
    });
    const signed = await signer.sign(request);
    const { response } = await handler.handle(signed);
    response.body.resume();
    if (response.statusCode !== 200) throw new Error(`PUT ${key}: ${response.statusCode}`);
    return response.headers.etag;
  };
  return { put, close: () => handler.destroy() };
}

async function run(name, path) {
  let next = 0;
  const worker = async () => {
    while (next < COUNT) await path.put(`${name}/api/v1/users/user${next++}`);
  };
  // Warm up (JIT, sockets), then measure.
  for (let i = 0; i < 200; i++) await path.put(`${name}/warm/${i}`);
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  path.close();
  const perPut = (used.user + used.system) / COUNT;
  console.log(
    `${name.padEnd(28)} ${seconds.toFixed(2).padStart(7)} s ${Math.round(COUNT / seconds)
      .toLocaleString('en-US')
      .padStart(7)} PUTs/s ` +
      `${Math.round(perPut).toLocaleString('en-US').padStart(5)} us CPU per PUT (${Math.round(1e6 / perPut).toLocaleString('en-US')} PUTs/s on one core)`,
  );
}

console.log(`${COUNT.toLocaleString('en-US')} PUTs of ${body.length} bytes at concurrency ${CONCURRENCY}, ${DELAY} ms per answer:`);
const paths = {
  'sdk (as client.ts)': () => viaSdk({}),
  'sdk + cacheMiddleware': () => viaSdk({ cacheMiddleware: true }),
  'signer + handler (lean)': () => viaSigner(),
};
for (const [name, make] of Object.entries(paths)) if (!ONLY || name.startsWith(ONLY)) await run(name.replace(/[^a-zA-Z]+/g, '-'), make());
server.kill();
