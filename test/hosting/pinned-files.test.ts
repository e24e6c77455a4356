/**
 * serve beside watch: documents are replaced by atomic rename while they are being served. Every
 * answer must be one whole version of the document, never the old length with the new bytes.
 */
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request as httpRequest, Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { afterAll, describe, expect, it } from 'vitest';
import { createOrigin, listen } from '../../src/hosting/serve/origin.js';
import { pinnedFiles } from '../../src/hosting/serve/pinned-files.js';
import { buildSampleSnapshot } from './fixture.js';

const dir = mkdtempSync(join(tmpdir(), 'profile-snapshot-pinned-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('pinned files', () => {
  it('stat and every stream come from the file first opened, even after a rename over its name', async () => {
    const path = join(dir, 'doc');
    writeFileSync(path, 'old version');
    const files = pinnedFiles();
    const stats = await files.lstat(path);
    writeFileSync(join(dir, 'next'), 'the new, longer version of the document');
    renameSync(join(dir, 'next'), path);
    expect(stats.size).toBe('old version'.length);
    expect(await text(files.createReadStream(path))).toBe('old version');
    expect(await text(files.createReadStream(path, { start: 4, end: 10 }))).toBe('version');
    files.close();
    const fresh = pinnedFiles();
    expect((await fresh.lstat(path)).size).toBe('the new, longer version of the document'.length);
    fresh.close();
  });

  it('a symlink is missing (ENOENT), never followed', async () => {
    writeFileSync(join(dir, 'target'), 'secret');
    symlinkSync(join(dir, 'target'), join(dir, 'link'));
    const files = pinnedFiles();
    await expect(files.lstat(join(dir, 'link'))).rejects.toMatchObject({ code: 'ENOENT' });
    files.close();
  });

  it('the origin serves whole documents while they are replaced many times a second', async () => {
    const snapshot = buildSampleSnapshot();
    const { server } = createOrigin({ out: snapshot.out });
    const { port } = await listen(server, 0, '127.0.0.1');
    const file = join(snapshot.out, 'api/v1/users/alice');
    const original = readFileSync(file, 'utf8');
    // Versions of different lengths, all valid JSON.
    const versions = Array.from({ length: 8 }, (_, i) => original.replace('"bio":"', `"bio":"${'x'.repeat(i * 997)}`));
    let stop = false;
    const swapper = (async () => {
      for (let i = 0; !stop; i++) {
        writeFileSync(`${file}.next`, versions[i % versions.length]!);
        renameSync(`${file}.next`, file);
        await new Promise((r) => setImmediate(r));
      }
    })();
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    const one = () =>
      new Promise<{ length: number; body: string }>((resolve, reject) => {
        httpRequest(`http://127.0.0.1:${port}/api/v1/users/ALICE`, { agent }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            body += c;
          });
          res.on('end', () => resolve({ length: Number(res.headers['content-length']), body }));
          res.on('error', reject);
        })
          .on('error', reject)
          .end();
      });
    try {
      const answers = await Promise.all(Array.from({ length: 400 }, one));
      for (const a of answers) {
        expect(Buffer.byteLength(a.body)).toBe(a.length);
        expect(versions).toContain(a.body);
      }
    } finally {
      stop = true;
      await swapper;
      agent.destroy();
      await new Promise((r) => {
        server.close(r);
        server.closeAllConnections();
      });
      snapshot.cleanup();
    }
  });

  it('closes every descriptor once the answer is done, also when the client hangs up first or never reads', async () => {
    const snapshot = buildSampleSnapshot();
    const { server } = createOrigin({ out: snapshot.out });
    const { port } = await listen(server, 0, '127.0.0.1');
    const openFds = () => readdirSync('/proc/self/fd').length;
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    process.on('uncaughtException', onUncaught);
    try {
      const etag = await new Promise<string>((resolve) =>
        httpRequest(`http://127.0.0.1:${port}/api/v1/users/alice`, (res) => {
          res.resume();
          resolve(String(res.headers.etag));
        }).end(),
      );
      const before = openFds();
      const one = (i: number) =>
        new Promise<void>((resolve) => {
          const path = ['/api/v1/users/alice', '/api/v1/users/NOBODY', '/service-api/v1/creators', '/api/v1/users?username='][i % 4]!;
          const req = httpRequest(
            `http://127.0.0.1:${port}${path}`,
            {
              method: i % 5 === 0 ? 'HEAD' : 'GET',
              // Connection: close makes the client hang up as soon as it has Content-Length bytes.
              headers: { connection: 'close', ...(i % 7 === 0 ? { 'if-none-match': etag } : {}) },
            },
            (res) => {
              if (i % 3 === 0) {
                res.destroy();
                resolve();
                return;
              } // abandons the body
              res.resume();
              res.on('end', resolve);
            },
          );
          req.on('error', () => resolve());
          req.end();
        });
      for (let round = 0; round < 10; round++) await Promise.all(Array.from({ length: 30 }, (_, i) => one(i + round)));
      await new Promise((r) => setTimeout(r, 300));
      expect(uncaught).toEqual([]);
      expect(openFds()).toBeLessThanOrEqual(before + 2);
    } finally {
      process.off('uncaughtException', onUncaught);
      await new Promise((r) => {
        server.close(r);
        server.closeAllConnections();
      });
      snapshot.cleanup();
    }
  });
});
