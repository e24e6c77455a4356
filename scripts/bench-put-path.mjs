/**
 * What one small PutObject costs the publisher's CPU, by the way it is sent: the AWS SDK's S3Client
 * set up as src/publish/bucket/client.ts does, the same with `cacheMiddleware: true`, and the path publish
 * ships (src/publish/bucket/fast-put.ts through Remote, from build/: the client's signer, endpoint rules,
 * retry strategy and counting handler, without the middleware stack). Each sends --count PUTs of a
 * ~2 KB body (a profile's size) at --concurrency into bench-s3-memory.mjs (25 ms per answer), in this
 * process, and reports wall seconds, PUTs/s and CPU microseconds per PUT (medians of --repeats
 * rounds) and the ratio to the SDK path: how fast the cold publish's upload loop can go on one core.
 *
 * `--baseline <build dir>` adds the same path from another build (the commit before a change, compiled),
 * measured in the same rounds.
 *
 *   node scripts/bench-put-path.mjs [--count 20000] [--concurrency 64] [--delay-ms 25] [--repeats 3] [--only <path>]
 *     [--baseline <build dir>]
 */
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { fork } from 'node:child_process';
import { Agent } from 'node:http';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const COUNT = Number(value('--count', '20000'));
const CONCURRENCY = Number(value('--concurrency', '64'));
const DELAY = value('--delay-ms', '25');
const ONLY = value('--only', undefined);
const REPEATS = Number(value('--repeats', '3'));
const BASELINE = value('--baseline', undefined);
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

/** The shipped path: Remote (src/publish/bucket/client.ts) and its FastPut, from build/ (npm run compile first). */
async function viaFastPut(build = join(repo, 'build')) {
  const { Remote } = await import(join(resolve(build), 'publish/bucket/client.js'));
  process.env.AWS_ACCESS_KEY_ID = credentials.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = credentials.secretAccessKey;
  const remote = new Remote({ bucket: 'bench', prefix: '', endpoint, concurrency: CONCURRENCY }, 'us-east-1');
  const headers = { 'content-type': HEADERS.ContentType, 'cache-control': HEADERS.CacheControl };
  return { put: (key) => remote.fastPut.put(key, body, headers, `upload ${key}`), close: () => remote.close() };
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
  return { seconds, perPut: (used.user + used.system) / COUNT };
}

const median = (values) => values.toSorted((a, b) => a - b)[values.length >> 1];
const int = (n) => Math.round(n).toLocaleString('en-US');

console.log(
  `${COUNT.toLocaleString('en-US')} PUTs of ${body.length} bytes at concurrency ${CONCURRENCY}, ${DELAY} ms per answer; medians of ${REPEATS} rounds (paths alternate within a round):`,
);
const paths = {
  'sdk (S3Client as client.ts)': async () => viaSdk({}),
  'sdk + cacheMiddleware': async () => viaSdk({ cacheMiddleware: true }),
  'fast-put (Remote.fastPut)': () => viaFastPut(),
  ...(BASELINE === undefined ? {} : { 'fast-put (--baseline)': () => viaFastPut(BASELINE) }),
};
const chosen = Object.entries(paths).filter(([name]) => !ONLY || name.startsWith(ONLY));
const results = new Map(chosen.map(([name]) => [name, []]));
for (let round = 0; round < REPEATS; round++)
  for (const [name, make] of chosen) results.get(name).push(await run(`${name.replace(/[^a-zA-Z]+/g, '-')}${round}`, await make()));
const base = results.values().next().value;
const baseCpu = median(base.map((r) => r.perPut));
for (const [name, runs] of results) {
  const seconds = median(runs.map((r) => r.seconds));
  const perPut = median(runs.map((r) => r.perPut));
  console.log(
    `${name.padEnd(30)} ${seconds.toFixed(2).padStart(7)} s ${int(COUNT / seconds).padStart(7)} PUTs/s ${int(perPut).padStart(5)} us CPU per PUT ` +
      `(${int(1e6 / perPut)} PUTs/s on one core; CPU per PUT ${(perPut / baseCpu).toFixed(2)}x the first path's)`,
  );
}
server.kill();
