/**
 * If-None-Match as RFC 9110 defines it (13.1.2, 8.8.3.2, 15.4.5): the matching itself
 * (matchesIfNoneMatch in src/hosting/routes/routing.js, which the Worker embeds too), then the
 * origin's answers on every path over real sockets on 127.0.0.1: the quick path, Node's path from memory, every answer read from disk (cacheBytes 0),
 * and serve-handler's path for a creators list too large to keep in memory. A real snapshot.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { matchesIfNoneMatch } from '../../src/hosting/routes/routing.js';
import { FILE_CACHE_DEFAULTS } from '../../src/hosting/serve/file-cache.js';
import { closeGracefully, createOrigin, listen, type Origin } from '../../src/hosting/serve/origin.js';
import { buildSampleSnapshot, growCreatorsList, type Snapshot } from './fixture.js';
import { CONTRACT, CONTRACT_NAMES } from './request-table.js';

describe('matchesIfNoneMatch', () => {
  const etag = '"3f2a"';

  it('matches the tag, any tag of a list, with or without whitespace, weakly either way', () => {
    for (const header of [
      '"3f2a"',
      'W/"3f2a"',
      '"x", "3f2a"',
      '"x","3f2a"',
      ' "x" ,\t"3f2a"\t',
      'W/"x", W/"3f2a", "y"',
      // The list syntax allows empty elements.
      ', ,"3f2a",',
    ])
      expect(matchesIfNoneMatch(header, etag), header).toBe(true);
    expect(matchesIfNoneMatch('"3f2a"', 'W/"3f2a"')).toBe(true);
    expect(matchesIfNoneMatch('W/"3f2a"', 'W/"3f2a"')).toBe(true);
  });

  it('`*` matches any tag, alone', () => {
    expect(matchesIfNoneMatch('*', etag)).toBe(true);
    expect(matchesIfNoneMatch(' * ', etag)).toBe(true);
  });

  it('matches nothing for other tags, no header, an empty one', () => {
    for (const header of ['"3f2b"', '"x", W/"y"', '"3F2A"', '"3f2a "', '', ',', ' , '])
      expect(matchesIfNoneMatch(header, etag), JSON.stringify(header)).toBe(false);
    expect(matchesIfNoneMatch(undefined, etag)).toBe(false);
  });

  it('a comma is part of a tag: the list is not split on it', () => {
    expect(matchesIfNoneMatch('"a,b"', '"a,b"')).toBe(true);
    expect(matchesIfNoneMatch('"x", "a,b"', '"a,b"')).toBe(true);
    expect(matchesIfNoneMatch('"a,b"', '"a"')).toBe(false);
    expect(matchesIfNoneMatch('"a,b"', '"b"')).toBe(false);
  });

  it('a malformed value matches nothing, even where one of its tags would', () => {
    for (const header of [
      '3f2a',
      '"3f2a',
      '3f2a"',
      'w/"3f2a"',
      'W/ "3f2a"',
      '"3f2a" "3f2a"',
      '"3f2a";"x"',
      '"3f2a", x',
      'x, "3f2a"',
      '*, "3f2a"',
      '"3f2a", *',
      '**',
      '"3f"2a"',
      '"3f2a\x7f"',
      '"\x003f2a"',
    ])
      expect(matchesIfNoneMatch(header, etag), JSON.stringify(header)).toBe(false);
  });

  it('takes obs-text inside a tag', () => {
    expect(matchesIfNoneMatch('"caf\xe9"', '"caf\xe9"')).toBe(true);
    expect(matchesIfNoneMatch('W/"caf\xe9", "x"', '"caf\xe9"')).toBe(true);
  });
});

/** One answer read off the wire. */
interface Raw {
  status: number;
  /** Header names in the order sent. */
  names: string[];
  headers: Record<string, string>;
  body: string;
}

const parse = (text: string): Raw => {
  const end = text.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  const names = lines.map((line) => {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    return line.slice(0, colon);
  });
  return { status: Number(statusLine!.split(' ')[1]), names, headers, body: text.slice(end + 4) };
};

describe('If-None-Match at the origin', () => {
  let small: Snapshot;
  let large: Snapshot;
  let grownList: Buffer;
  /** The sample snapshot on three paths; `large`, the same with a creators list beyond the cache's files. */
  const servers: Record<'quick' | 'full' | 'disk' | 'large', { origin: Origin; port: number }> = {} as never;

  beforeAll(async () => {
    small = buildSampleSnapshot();
    large = buildSampleSnapshot();
    grownList = growCreatorsList(large.out);
    const options = {
      quick: { out: small.out },
      full: { out: small.out, quickPath: false },
      disk: { out: small.out, cacheBytes: 0 },
      large: { out: large.out },
    };
    for (const [name, option] of Object.entries(options)) {
      const origin = createOrigin(option);
      const { port } = await listen(origin.server, 0, '127.0.0.1');
      servers[name as keyof typeof servers] = { origin, port };
    }
  });
  afterAll(async () => {
    for (const { origin } of Object.values(servers)) await closeGracefully(origin.server, 1000);
    small?.cleanup();
    large?.cleanup();
  });

  /** Sends `text` on a connection of its own; resolves with all the server sent, once it closed it. */
  const exchange = async (server: keyof typeof servers, text: string): Promise<string> => {
    const socket = connect(servers[server].port, '127.0.0.1');
    await once(socket, 'connect');
    let got = '';
    socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
    const closed = once(socket, 'close');
    socket.write(Buffer.from(text, 'latin1'));
    await closed;
    return got;
  };
  const request = (target: string, headers: string[] = [], method = 'GET', close = true) =>
    `${method} ${target} HTTP/1.1\r\nHost: origin.test\r\n${headers.map((h) => `${h}\r\n`).join('')}${close ? 'Connection: close\r\n' : ''}\r\n`;
  const answer = async (server: keyof typeof servers, target: string, headers: string[] = [], method = 'GET') =>
    parse(await exchange(server, request(target, headers, method)));
  const etagOf = async (server: keyof typeof servers, target: string, headers: string[] = []) => {
    const first = await answer(server, target, headers);
    expect(first.status).toBe(200);
    return first.headers.etag!;
  };
  const ALL = ['quick', 'full', 'disk', 'large'] as const;

  it('answers 304 to any matching tag of a list, weak or strong, on every path; 200 to others and to malformed values', async () => {
    for (const server of ALL) {
      const etag = await etagOf(server, '/api/v1/users/alice');
      const matching = [etag, `W/${etag}`, `"x", ${etag}`, `"x",W/${etag}`, `W/"x" ,\t ${etag}`, `, ${etag},`];
      for (const tag of matching)
        for (const method of ['GET', 'HEAD']) {
          const a = await answer(server, '/api/v1/users/Alice', [`If-None-Match: ${tag}`], method);
          expect([a.status, a.body], `${server} ${method} ${tag}`).toEqual([304, '']);
        }
      const profile = readFileSync(join(small.out, 'api/v1/users/alice'), 'latin1');
      for (const tag of ['"x"', `"x", W/"y"`, etag.slice(1, -1), `${etag} ${etag}`, `${etag}, x`, `*, ${etag}`, `w/${etag}`, '']) {
        const a = await answer(server, '/api/v1/users/alice', [`If-None-Match: ${tag}`]);
        expect([a.status, a.body], `${server} ${tag}`).toEqual([200, profile]);
      }
    }
  });

  it('a 304 carries the contract`s headers and the ETag, no length, no body; the quick path sends the same bytes', async () => {
    const etag = await etagOf('quick', '/api/v1/users/alice');
    const sent: Record<string, string> = {};
    for (const server of ALL) {
      // A 304, then a 200 on the same connection: nothing is sent after the 304's head.
      const text = await exchange(
        server,
        request('/api/v1/users/alice', [`If-None-Match: "x", W/${etag}`], 'GET', false) + request('/api/v1/users/alice'),
      );
      const [notModified, ok] = text.split(/(?=HTTP\/1\.1 )/);
      const a = parse(notModified!);
      expect(a.status, server).toBe(304);
      expect(a.names, server).toEqual([...CONTRACT_NAMES, 'ETag', 'Date', 'Connection', 'Keep-Alive']);
      expect(a.headers.etag).toBe(etag);
      for (const [name, value] of Object.entries(CONTRACT)) expect(a.headers[name], name).toBe(value);
      expect(a.body).toBe('');
      expect(parse(ok!).status).toBe(200);
      sent[server] = text.replace(/\r\nDate: [^\r]*\r\n/g, '\r\nDate: -\r\n');
    }
    expect(sent.quick).toBe(sent.full);
    expect(sent.disk).toBe(sent.full);
    expect(sent.large).toBe(sent.full);
  });

  it('`*` matches any current document, never an error, nor another method`s answer', async () => {
    for (const server of ALL) {
      expect((await answer(server, '/api/v1/users/alice', ['If-None-Match: *'])).status, server).toBe(304);
      expect((await answer(server, '/service-api/v1/creators', ['If-None-Match: *'])).status, server).toBe(304);
      const miss = await answer(server, '/api/v1/users/nobody', ['If-None-Match: *']);
      expect([miss.status, JSON.parse(miss.body).error.code], server).toEqual([404, 'USER_NOT_FOUND']);
      const unknown = await answer(server, '/api/v1/nope', ['If-None-Match: *']);
      expect([unknown.status, JSON.parse(unknown.body).error.code], server).toEqual([404, 'NOT_FOUND']);
      const post = await answer(server, '/api/v1/users/alice', ['If-None-Match: *', 'Content-Length: 0'], 'POST');
      expect([post.status, JSON.parse(post.body).error.code], server).toEqual([405, 'METHOD_NOT_ALLOWED']);
      expect((await answer(server, '/api/v1/users/alice', ['If-None-Match: *'], 'OPTIONS')).status, server).toBe(204);
    }
  });

  it('reads several If-None-Match lines as one list', async () => {
    for (const server of ALL) {
      const etag = await etagOf(server, '/api/v1/users/alice');
      const a = await answer(server, '/api/v1/users/alice', ['If-None-Match: "x"', `If-None-Match: W/${etag}`]);
      expect([a.status, a.headers.etag], server).toEqual([304, etag]);
      const none = await answer(server, '/api/v1/users/alice', ['If-None-Match: "x"', 'If-None-Match: "y"']);
      expect(none.status, server).toBe(200);
    }
  });

  it('the creators list, from memory and on serve-handler`s path: each encoding`s own 304, with its ETag and Vary', async () => {
    // The large snapshot's list and variant are beyond what the cache reads: serve-handler answers them.
    expect(grownList.length).toBeGreaterThan(FILE_CACHE_DEFAULTS.maxFileBytes);
    expect(readFileSync(join(large.out, 'service-api/v1/.creators.gz')).length).toBeGreaterThan(FILE_CACHE_DEFAULTS.maxFileBytes);
    for (const server of ALL) {
      const list = server === 'large' ? grownList.toString('latin1') : readFileSync(join(small.out, 'service-api/v1/creators'), 'latin1');
      const zipped = await etagOf(server, '/service-api/v1/creators', ['Accept-Encoding: gzip']);
      const plain = await etagOf(server, '/service-api/v1/creators');
      expect(zipped).not.toBe(plain);
      for (const [tag, accept] of [
        [`"x", W/${zipped}`, ['Accept-Encoding: gzip']],
        [`W/${plain}`, []],
      ] as const) {
        for (const method of ['GET', 'HEAD']) {
          const a = await answer(server, '/service-api/v1/creators', [`If-None-Match: ${tag}`, ...accept], method);
          expect([a.status, a.body], `${server} ${method} ${tag}`).toEqual([304, '']);
          // No Content-Encoding, no Content-Length: a 304 describes no representation of its own.
          expect(a.names, `${server} ${tag}`).toEqual(['Vary', ...CONTRACT_NAMES, 'ETag', 'Date', 'Connection']);
          expect([a.headers.vary, a.headers.etag]).toEqual(['Accept-Encoding', tag.replace(/^.*W\//, '')]);
        }
      }
      // The variant's tag does not match the list's own bytes.
      const other = await answer(server, '/service-api/v1/creators', [`If-None-Match: ${zipped}`]);
      expect([other.status, other.body === list], server).toEqual([200, true]);
    }
  });

  it('keeps the connection after serve-handler`s 304, and reads no body into it', async () => {
    const etag = await etagOf('large', '/service-api/v1/creators');
    const text = await exchange(
      'large',
      request('/service-api/v1/creators', [`If-None-Match: W/${etag}`], 'GET', false) +
        request('/service-api/v1/creators', [`If-None-Match: "x", ${etag}`], 'HEAD', false) +
        request('/api/v1/users/alice'),
    );
    const answers = text.split(/(?=HTTP\/1\.1 )/).map(parse);
    expect(answers.map((a) => [a.status, a.body])).toEqual([
      [304, ''],
      [304, ''],
      [200, readFileSync(join(large.out, 'api/v1/users/alice'), 'latin1')],
    ]);
  });
});
