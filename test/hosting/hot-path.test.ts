/**
 * The origin's hot path (src/hosting/serve/file-cache.ts, cached-answers.ts, request-target.ts): documents
 * answered from memory must be exactly what serve-handler's path answers, never an older version
 * than the file on disk, and plain targets must route exactly as parsed ones.
 */
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileCache, type CachedFile } from '../../src/hosting/serve/file-cache.js';
import { createOrigin, listen } from '../../src/hosting/serve/origin.js';
import { routeParsed, routeRequest } from '../../src/hosting/serve/request-target.js';
import { ROUTES } from '../../src/hosting/routes/routes.js';
import { CONTRACT_NAMES } from './request-table.js';
import { buildSampleSnapshot, type Snapshot } from './fixture.js';

const dir = mkdtempSync(join(tmpdir(), 'profile-snapshot-cache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes `text` as a new file renamed over `path`, as `watch` replaces documents. */
const replace = (path: string, text: string) => {
  writeFileSync(`${path}.next`, text);
  renameSync(`${path}.next`, path);
};

describe('file cache', () => {
  it('serves a cached version only while the name points at that file', () => {
    const cache = new FileCache();
    const path = join(dir, 'doc');
    replace(path, 'version A');
    const first = cache.lookup(path);
    expect(typeof first === 'object' && first.body.toString()).toBe('version A');
    expect(cache.lookup(path)).toBe(first);
    // Same length, renamed over: a new file, read again at once.
    replace(path, 'version B');
    const second = cache.lookup(path);
    expect(typeof second === 'object' && second.body.toString()).toBe('version B');
    expect(typeof second === 'object' && typeof first === 'object' && second.etag !== first.etag).toBe(true);
    rmSync(path);
    expect(cache.lookup(path)).toBe('missing');
  });

  it('leaves symlinks, directories and large files to serve-handler, and stays within its bound', () => {
    const cache = new FileCache({ maxBytes: 4096, maxFileBytes: 1024 });
    writeFileSync(join(dir, 'target'), 'secret');
    symlinkSync(join(dir, 'target'), join(dir, 'link'));
    expect(cache.lookup(join(dir, 'link'))).toBeUndefined();
    expect(cache.lookup(dir)).toBeUndefined();
    // A FIFO named like a document: turned away at once, never waiting for a writer.
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    expect(cache.lookup(join(dir, 'fifo'))).toBeUndefined();
    writeFileSync(join(dir, 'large'), 'x'.repeat(1025));
    expect(cache.lookup(join(dir, 'large'))).toBeUndefined();
    for (let i = 0; i < 50; i++) writeFileSync(join(dir, `small-${i}`), 'y'.repeat(1000));
    const kept = Array.from({ length: 50 }, (_, i) => cache.lookup(join(dir, `small-${i}`)));
    expect(kept.every((k) => typeof k === 'object' && k.body.toString() === 'y'.repeat(1000))).toBe(true);
    // Two fit (1000 bytes and the overhead each): the rest were answered, and few of them kept.
    expect(cache.held.bytes).toBeLessThanOrEqual(4096);
    expect(cache.held.versions).toBeLessThanOrEqual(2);
  });

  it('keeps each version`s extra bytes beside its body and counts them in its bound', () => {
    const extraOf = (size: number, etag: string) => `Length: ${size}\r\nTag: ${etag}\r\n`;
    const paths = Array.from({ length: 200 }, (_, i) => join(dir, `tiny-${i}`));
    paths.forEach((path, i) => writeFileSync(path, String(i % 10)));
    const roomy = { maxBytes: 2 ** 20, maxFileBytes: 1024 };
    const plain = new FileCache(roomy);
    const cache = new FileCache({ ...roomy, extraOf });
    for (const path of paths) [plain, cache].forEach((c) => c.lookup(path));
    const found = cache.lookup(paths[0]!) as CachedFile;
    const extra = extraOf(1, found.etag);
    expect(found.extra.toString('latin1')).toBe(extra);
    // Cut from the cache's own slab right after the body: dropped with it, in the same turn.
    expect(found.extra.buffer).toBe(found.body.buffer);
    expect(found.extra.byteOffset).toBe(found.body.byteOffset + found.body.length);
    expect(cache.held.versions).toBe(paths.length);
    expect(cache.held.bytes - plain.held.bytes).toBe(paths.length * extra.length);
    // A small cache filled with many tiny files holds what its bound allows, extra bytes included.
    const entry = cache.held.bytes / paths.length;
    const small = new FileCache({ maxBytes: Math.floor(10.5 * entry), maxFileBytes: 1024, extraOf });
    for (const path of paths) small.lookup(path);
    expect(small.held.versions).toBe(10);
    expect(small.held.bytes).toBe(10 * entry);
  });

  it('answers about the share of a walk over the whole tree that it holds, from memory', () => {
    // A CDN's misses walk every document in turn: a cache that holds half of them.
    const cache = new FileCache({ maxBytes: 100 * (1000 + 704), maxFileBytes: 1024 });
    const paths = Array.from({ length: 200 }, (_, i) => join(dir, `walked-${i}`));
    paths.forEach((path, i) => writeFileSync(path, String(i % 10).repeat(1000)));
    const seen = new Map<string, object>();
    let fromMemory = 0;
    for (let lap = 0; lap < 10; lap++)
      for (const path of paths) {
        const found = cache.lookup(path);
        if (typeof found !== 'object') throw new Error(`${path} not answered`);
        if (lap >= 5 && seen.get(path) === found) fromMemory++;
        seen.set(path, found);
      }
    // Letting every miss in (dropping the oldest) would answer none of them from memory.
    expect(fromMemory / (5 * paths.length)).toBeGreaterThan(0.35);
    expect(cache.held.bytes).toBeLessThanOrEqual(100 * (1000 + 704));
    // A document it holds, replaced on disk, is read again and kept in place of the old version.
    const held = paths.find((path) => seen.get(path) === cache.lookup(path))!;
    replace(held, 'z'.repeat(1000));
    const renewed = cache.lookup(held);
    expect(typeof renewed === 'object' && renewed.body.toString()).toBe('z'.repeat(1000));
    expect(cache.lookup(held)).toBe(renewed);
  });

  it('keeps every body its own bytes, though small ones share memory', () => {
    const cache = new FileCache();
    const texts = Array.from({ length: 400 }, (_, i) => `{"n":${i}}`.padEnd(100 + (i % 7) * 300, ' '));
    texts.forEach((text, i) => writeFileSync(join(dir, `shared-${i}`), text));
    const found = texts.map((_, i) => cache.lookup(join(dir, `shared-${i}`)));
    found.forEach((entry, i) => expect(typeof entry === 'object' && entry.body.toString()).toBe(texts[i]));
  });

  it('stays within its bound while one document is replaced over and over', () => {
    const cache = new FileCache({ maxBytes: 4096, maxFileBytes: 1024 });
    const path = join(dir, 'replaced');
    for (let i = 0; i < 100; i++) {
      replace(path, String(i % 10).repeat(1000));
      const found = cache.lookup(path);
      expect(typeof found === 'object' && found.body.toString()).toBe(String(i % 10).repeat(1000));
    }
    // Each version counts 1000 bytes and its overhead: two fit, the rest were dropped.
    expect(cache.held.bytes).toBeLessThanOrEqual(4096);
    expect(cache.held.versions).toBeLessThanOrEqual(2);
  });
});

describe('routing plain targets by hand', () => {
  it('resolves exactly as WHATWG parsing and decoding would, for any target of the plain alphabet', () => {
    const piece = fc.constantFrom(
      'api',
      'service-api',
      'v1',
      'users',
      'creators',
      'Alice',
      'bob',
      '.',
      '..',
      '',
      'a.b',
      '~x',
      '-',
      '_errors',
    );
    const path = fc.array(piece, { maxLength: 6 }).map((parts) => `/${parts.join('/')}`);
    const pair = fc
      .tuple(fc.constantFrom('username', 'user', ''), fc.constantFrom('', '=', '=Alice', '=bob', '=a=b'))
      .map(([k, v]) => k + v);
    const query = fc.option(
      fc.array(pair, { maxLength: 4 }).map((pairs) => `?${pairs.join('&')}`),
      { nil: '' },
    );
    fc.assert(
      fc.property(path, query, (p, q) => {
        expect(routeRequest(p + q)).toEqual(routeParsed(p + q, ROUTES));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('answers from memory', () => {
  let snapshot: Snapshot;
  let port: number;
  let close: () => void;
  beforeAll(async () => {
    snapshot = buildSampleSnapshot();
    const { server } = createOrigin({ out: snapshot.out });
    ({ port } = await listen(server, 0, '127.0.0.1'));
    close = () => {
      server.close();
      server.closeAllConnections();
    };
  });
  afterAll(() => {
    close?.();
    snapshot?.cleanup();
  });

  /** The raw head of an answer, as sent. */
  const head = (target: string, extra = '') =>
    new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = connect(port, '127.0.0.1', () =>
        socket.write(`GET ${target} HTTP/1.1\r\nHost: x\r\n${extra}Connection: close\r\n\r\n`),
      );
      socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
      socket.on('end', () => resolve(text.slice(0, text.indexOf('\r\n\r\n'))));
      socket.on('error', reject);
    });

  it('sends serve-handler`s headers, in its order, for a profile, an error document and a 304', async () => {
    const names = (h: string) =>
      h
        .split('\r\n')
        .slice(1)
        .map((line) => line.slice(0, line.indexOf(':')));
    const ok = await head('/api/v1/users/ALICE');
    expect(ok).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(names(ok)).toEqual([...CONTRACT_NAMES, 'Content-Length', 'Accept-Ranges', 'ETag', 'Date', 'Connection']);
    const miss = await head('/api/v1/users/nobody');
    expect(miss).toMatch(/^HTTP\/1\.1 404 Not Found/);
    expect(names(miss)).toEqual([...CONTRACT_NAMES, 'Content-Length', 'Accept-Ranges', 'ETag', 'Date', 'Connection']);
    const etag = /ETag: (.*)/.exec(ok)![1]!;
    const again = await head('/api/v1/users/alice', `If-None-Match: ${etag}\r\n`);
    expect(again).toMatch(/^HTTP\/1\.1 304 Not Modified/);
    // A 304 carries the ETag it validated (RFC 9110 15.4.5), after the contract's headers.
    expect(names(again)).toEqual([...CONTRACT_NAMES, 'ETag', 'Date', 'Connection']);
  });

  it('never answers an older version than the file on disk, under load, while it is replaced', async () => {
    const file = join(snapshot.out, 'api/v1/users/alice');
    const original = readFileSync(file, 'utf8');
    // Same length each time: only the file's identity tells the versions apart.
    const version = (i: number) => original.replace('"bio":"', `"bio":"${String(i % 10).repeat(3)}`);
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const get = () =>
      new Promise<string>((resolve, reject) => {
        httpRequest(`http://127.0.0.1:${port}/api/v1/users/Alice`, { agent }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve(body));
        })
          .on('error', reject)
          .end();
      });
    try {
      for (let i = 0; i < 40; i++) {
        replace(file, version(i));
        const answers = await Promise.all(Array.from({ length: 8 }, get));
        for (const body of answers) expect(body).toBe(version(i));
      }
    } finally {
      agent.destroy();
      replace(file, original);
    }
  });
});
