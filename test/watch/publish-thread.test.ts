/**
 * The watcher's publish runs in a thread of its own (src/watch/publish-thread.ts), so a build that
 * holds the main thread does not hold the publish's requests. Proved with the compiled modules (the
 * thread exists only compiled) against moto_server, a process of its own: the main thread is held
 * in a synchronous child process that waits for the whole tree to appear in the bucket. A publish
 * on the main thread could send nothing meanwhile, and the child would give up.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIALS, hasMoto, startMoto } from '../helpers/s3.js';
import { expectExact, newSite, PREFIX, type Site } from '../publish/helpers.js';
import { ensureCompiled, REPO } from './helpers.js';

type ThreadModule = typeof import('../../src/watch/publish-thread.js');
type PinModule = typeof import('../../src/output/pin.js');
type PublishProgress = import('../../src/publish/report.js').PublishProgress;

const USERS = 300;
/** How long the held main thread waits for the tree before it calls the publish stuck. */
const HOLD_LIMIT_MS = 60_000;

/** Looks for an object (argv: endpoint, bucket, key) until it exists: exit 0, or 1 after the limit. */
const POLLER = `
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
const [endpoint, Bucket, Key] = process.argv.slice(1);
const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, maxAttempts: 1 });
const deadline = Date.now() + ${HOLD_LIMIT_MS};
for (;;) {
  if (await client.send(new HeadObjectCommand({ Bucket, Key })).then(() => true, () => false)) process.exit(0);
  if (Date.now() > deadline) process.exit(1);
  await new Promise((r) => setTimeout(r, 100));
}`;

describe.skipIf(!hasMoto)('the publish thread (moto_server)', () => {
  let site: Site, thread: ThreadModule, pin: PinModule;
  const dir = mkdtempSync(join(tmpdir(), 'ps-publish-thread-'));

  beforeAll(async () => {
    ensureCompiled();
    thread = (await import(pathToFileURL(join(REPO, 'build/watch/publish-thread.js')).href)) as ThreadModule;
    pin = (await import(pathToFileURL(join(REPO, 'build/output/pin.js')).href)) as PinModule;
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey });
    const server = await startMoto();
    site = await newSite(server, dir, USERS);
    return async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    };
  }, 180_000);

  const options = (bucket = site.bucket) => ({
    out: site.out,
    remote: { bucket, prefix: PREFIX, endpoint: site.endpoint, region: 'us-east-1', pathStyle: true, concurrency: 4 },
  });

  it('sends the whole tree while the main thread is held, and reports its progress and result', async () => {
    const generation = pin.TreePin.take(site.out);
    const progress: PublishProgress[] = [];
    try {
      const publishing = thread.publishGeneration(options(), generation, undefined, (p) => progress.push(p));
      // The main thread is held from here until the creators list (sent after every profile) is live.
      const list = [site.endpoint, site.bucket, `${PREFIX}/service-api/v1/creators`];
      const held = spawnSync(process.execPath, ['--input-type=module', '-e', POLLER, ...list], { cwd: REPO, encoding: 'utf8' });
      expect(held.status, `the tree did not reach the bucket while the main thread was held: ${held.stderr}`).toBe(0);
      const report = await publishing;
      expect(report.profiles.put).toBe(USERS);
      expect(report.objects.put).toBeGreaterThan(2 * USERS);
      await expectExact(site);
      expect(progress.some((p) => p.phase === 'upload' && p.done > 0)).toBe(true);
      // The throttle never drops a phase's last event: the status ends at done, not short of it.
      const uploads = progress.filter((p) => p.phase === 'upload');
      expect(uploads.at(-1)!.done).toBe(uploads.at(-1)!.total);
    } finally {
      generation.release();
    }
  }, 120_000);

  it('hands a failure back typed, with its exit code and hint', async () => {
    const generation = pin.TreePin.take(site.out);
    try {
      const failure = await thread.publishGeneration(options('no-such-bucket'), generation, undefined, () => undefined).catch((e) => e);
      expect(failure).toBeInstanceOf(Error);
      expect(failure).toMatchObject({ kind: 'remote', exitCode: 6 });
      expect(failure.message).toContain('no-such-bucket');
      expect(failure.hint).toBeTruthy();
    } finally {
      generation.release();
    }
  }, 60_000);
});
