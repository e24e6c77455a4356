/**
 * `watch --publish`: the bucket follows the tree, one publish at a time; a failed publish is retried
 * on the next cycle even when nothing changed; status.json tells how publishing goes, without secrets.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readBucket, s3Env, startProxy, startS3rver, type S3Server } from '../helpers/s3.js';
import { publicObjects } from '../publish/helpers.js';
import { ensureCompiled, makeStore, type Proc, sql, startCli, status, tempDir, waitFor } from './helpers.js';

const SECRET = 'publish-secret-never-in-status';

describe('watch --publish', () => {
  let server: S3Server;
  let watcher: Proc | undefined;
  let dir: ReturnType<typeof tempDir>;
  beforeAll(async () => {
    ensureCompiled();
    server = await startS3rver();
  });
  afterAll(async () => {
    await server?.close();
  });
  afterEach(async () => {
    await watcher?.stop();
    dir?.cleanup();
  });

  /** The bucket's public objects equal the tree's files, byte for byte. */
  async function inStep(out: string, bucket: string): Promise<boolean> {
    const objects = publicObjects(await readBucket(server.endpoint, bucket, 'snap'));
    const { publishedFiles } = await import('./helpers.js');
    const files = publishedFiles(out);
    return files.length === objects.size && files.every((f) => objects.get(f)?.bytes === readFileSync(join(out, f), 'latin1'));
  }

  it('publishes after changing cycles, retries a failed publish on an unchanged cycle, and keeps --exec working', async () => {
    dir = tempDir();
    const db = join(dir.path, 'profiles.db'),
      out = join(dir.path, 'dist'),
      marker = join(dir.path, 'exec-ran');
    makeStore(db, 30);
    const bucket = await server.bucket();
    // A proxy that can be made to fail every request, standing for an outage of the store.
    let outage = false;
    const proxy = await startProxy(server.endpoint, { fault: () => (outage ? 'status503' : undefined) });
    watcher = startCli(
      [
        'watch',
        '--db',
        db,
        '--out',
        out,
        '--interval',
        '0.5',
        '--publish',
        `s3://${bucket}/snap`,
        '--endpoint',
        proxy.endpoint,
        '--single-writer',
        '--exec',
        `touch ${marker}`,
      ],
      { env: s3Env({ AWS_SECRET_ACCESS_KEY: SECRET, AWS_MAX_ATTEMPTS: '2' }) },
    );
    const first = await waitFor('a first publish', () => (status(out)?.publish?.lastSuccessAt ? status(out) : undefined), 30_000);
    expect(first.publish).toMatchObject({ runs: 1, consecutiveFailures: 0, behind: false, last: { put: 67, deleted: 0 } });
    expect(first.publish!.to).toMatch(/^s3:\/\/profiles-\d+-\d+\/snap at http:\/\/127\.0\.0\.1:\d+$/);
    expect(await inStep(out, bucket)).toBe(true);
    await waitFor('--exec to run', () => existsSync(marker));

    // An outage: the next changing cycle's publish fails, and so do the retries on unchanged cycles.
    outage = true;
    sql(db, "UPDATE users SET bio = 'changed' WHERE id = 4");
    const failed = await waitFor(
      'a failed publish',
      () => ((status(out)?.publish?.consecutiveFailures ?? 0) >= 2 ? status(out) : undefined),
      30_000,
    );
    expect(failed.publish).toMatchObject({ behind: true, lastError: { kind: 'remote', exitCode: 6 } });
    expect(failed.publish!.lastError!.message).toMatch(/the server kept failing \(HTTP 503/);
    const failedRuns = failed.publish!.runs;

    // The store recovers; the store does not change again, yet the next cycle publishes.
    outage = false;
    const recovered = await waitFor(
      'the publish to catch up',
      () => (status(out)?.publish?.consecutiveFailures === 0 && status(out)!.publish!.runs > failedRuns ? status(out) : undefined),
      60_000,
    ).catch((error: Error) => {
      throw new Error(
        `${error.message}\nstatus: ${JSON.stringify(status(out)?.publish)}\nproxy log tail: ${JSON.stringify(proxy.log.slice(-5))}`,
      );
    });
    expect(recovered.publish).toMatchObject({ behind: false, lastError: null, last: { put: 4, deleted: 0 } });
    expect(await inStep(out, bucket)).toBe(true);

    // Quiet cycles publish nothing more.
    const runs = recovered.publish!.runs;
    const cycles = recovered.cycles;
    await waitFor('two more cycles', () => (status(out)!.cycles >= cycles + 2 ? true : undefined));
    expect(status(out)!.publish!.runs).toBe(runs);

    await watcher?.stop();
    await proxy.close();
    const log = watcher!.stderr();
    expect(log).toMatch(/publish \(cycle \d+\): 67 objects put, 0 deleted/);
    expect(log).toMatch(/publish \(cycle \d+\): FAILED .*retried after the next cycle/);
    for (const text of [log, watcher!.stdout(), readFileSync(join(out, '.profile-snapshot/status.json'), 'utf8')])
      expect(text).not.toContain(SECRET);
  }, 150_000);
});
