/**
 * The publisher never writes a request into a pooled connection that sat idle past a server's
 * keep-alive timeout: a watcher's build holds the event loop for seconds while a publish is under
 * way, and the server closes the idle connections meanwhile. Against a real `node:http` server with
 * Node's default 5 s keep-alive timeout (the benchmark's in-memory S3, forked with it), a burst of
 * uploads after the event loop was held for 6 s needs no retry at all.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Remote } from '../../src/publish/bucket/client.js';
import { REPO } from '../helpers/paths.js';

const CONCURRENCY = 32;

describe('pooled connections left idle past the server keep-alive timeout', () => {
  let server: ChildProcess;
  let endpoint: string;
  beforeAll(async () => {
    server = fork(join(REPO, 'scripts/bench-s3-memory.mjs'), ['--keep-alive-ms', '5000'], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
    const port = await new Promise<number>((resolve) => server.stdout!.once('data', (d) => resolve(JSON.parse(String(d)).port as number)));
    endpoint = `http://127.0.0.1:${port}`;
  });
  afterAll(() => {
    server.kill('SIGKILL');
  });

  it('are closed, not reused: a burst after the event loop was held for 6 s sends every request once', async () => {
    process.env.AWS_ACCESS_KEY_ID = 'idle';
    process.env.AWS_SECRET_ACCESS_KEY = 'idle';
    const remote = await Remote.open({
      bucket: 'profiles',
      prefix: 'idle',
      endpoint,
      pathStyle: true,
      region: 'us-east-1',
      concurrency: CONCURRENCY,
    });
    const body = Buffer.alloc(2000, 'x');
    const burst = (round: number) =>
      Promise.all(
        Array.from({ length: CONCURRENCY * 4 }, (_, i) =>
          remote.fastPut.put(`idle/r${round}/${i}`, body, { 'content-type': 'application/json' }, `upload r${round}/${i}`),
        ),
      );
    try {
      await burst(0);
      expect(remote.retries).toBe(0);
      // A build: the loop held past the server's 5 s, which closes every idle connection meanwhile.
      const until = Date.now() + 6_000;
      while (Date.now() < until);
      await burst(1);
      expect(remote.retries).toBe(0);
      expect(remote.counts.PUT).toBe(2 * CONCURRENCY * 4);
    } finally {
      remote.close();
    }
  }, 30_000);
});
