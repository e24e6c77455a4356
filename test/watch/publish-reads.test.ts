/**
 * A publishing watcher's next cycle waits while a publish reads the tree's manifest and the bucket's
 * state (PublishRunner.pastItsReads): at a million profiles those two, held beside a cycle's own
 * buffers, made the watcher's peak. The wait ends once the plan is made (the first upload), not at
 * the publish's end, and never lasts longer than asked: a bucket that does not answer holds no cycle.
 */
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CREDENTIALS, startS3rver } from '../helpers/s3.js';
import { newSite, PREFIX, s3Workspace } from '../publish/helpers.js';
import { Watcher, type WatchEvent } from '../../src/watch/loop.js';
import { PublishRunner, type PublishHooks } from '../../src/watch/publisher.js';
import { waitFor } from './helpers.js';

const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
beforeAll(() => {
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey });
});
afterAll(() => {
  for (const [name, value] of [
    ['AWS_ACCESS_KEY_ID', saved.id],
    ['AWS_SECRET_ACCESS_KEY', saved.secret],
  ] as const)
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
});

/** A runner publishing `out` through `endpoint`; `events` gets each new phase, and 'finish'. */
function runnerFor(out: string, endpoint: string, bucket: string, events: string[]): PublishRunner {
  const hooks: PublishHooks = {
    onStart: () => undefined,
    onProgress: () => {
      const phase = runner.snapshot().progress?.phase;
      if (phase !== undefined && events.at(-1) !== phase) events.push(phase);
    },
    onFinish: (result) => events.push(result.report ? 'finish' : `failed: ${result.error?.message}`),
    onRole: () => undefined,
  };
  const remote = { bucket, prefix: PREFIX, endpoint, region: 'us-east-1', pathStyle: true, concurrency: 4 };
  const runner = new PublishRunner({ out, remote, waitMs: 0, singleWriter: true }, `s3://${bucket}/${PREFIX}`, hooks);
  return runner;
}

describe('a cycle after a publish starts', () => {
  const workspace = s3Workspace(startS3rver, 'ps-publish-reads-');

  it('waits until the publish has made its plan, not until it ends', async () => {
    const site = await newSite(workspace.server, workspace.dir, 200);
    const events: string[] = [];
    const runner = runnerFor(site.out, site.endpoint, site.bucket, events);
    expect(await runner.pastItsReads(1).then(() => 'no publish: at once')).toBe('no publish: at once');
    runner.afterCycle(1, true);
    await runner.pastItsReads(60_000);
    events.push('cycle');
    await runner.finish();
    await runner.close();
    // The plan was made (its first upload) before the cycle went on; several hundred objects went
    // up after that, and the cycle did not wait for them.
    const cycle = events.indexOf('cycle');
    expect(events.slice(0, cycle).at(-1), events.join(' ')).toBe('upload');
    expect(cycle, events.join(' ')).toBeLessThan(events.indexOf('finish'));
  }, 60_000);

  it('waits no longer than asked when the bucket does not answer', async () => {
    const site = await newSite(workspace.server, workspace.dir, 5);
    // Takes connections and never answers them.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    const events: string[] = [];
    const runner = runnerFor(site.out, `http://127.0.0.1:${port}`, site.bucket, events);
    try {
      runner.afterCycle(1, true);
      const started = performance.now();
      await runner.pastItsReads(300);
      const waited = performance.now() - started;
      expect(waited).toBeGreaterThanOrEqual(250);
      expect(waited).toBeLessThan(5_000);
      // Ended by the time asked, not by a plan.
      expect(events).toEqual([]);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
      await runner.finish();
      await runner.close().catch(() => undefined);
    }
  }, 60_000);

  it('is asked for by the watcher before each of its cycles', async () => {
    const site = await newSite(workspace.server, workspace.dir, 5);
    const asked = vi.spyOn(PublishRunner.prototype, 'pastItsReads');
    const events: WatchEvent[] = [];
    const cycles = () => events.filter((event) => event.type === 'cycle').length;
    const remote = { bucket: site.bucket, prefix: PREFIX, endpoint: site.endpoint, region: 'us-east-1', pathStyle: true, concurrency: 4 };
    const watcher = Watcher.start({
      build: { db: site.db, out: join(workspace.dir, 'watched') },
      intervalMs: 100,
      snapshotTime: () => ({ ms: Date.now(), reproducible: false }),
      onEvent: (event) => events.push(event),
      publish: { to: `s3://${site.bucket}/${PREFIX}`, options: { remote, singleWriter: true } },
    });
    let calls: number;
    try {
      await waitFor('three cycles', () => cycles() >= 3);
    } finally {
      watcher.stop();
      await watcher.done;
      calls = asked.mock.calls.length;
      asked.mockRestore();
    }
    expect(calls).toBeGreaterThanOrEqual(cycles());
  }, 60_000);
});
