/**
 * The request table: every public path form x letter case x user state, the query form's missing and
 * empty usernames, the creators list, unknown paths and paths other services own, each with the
 * answer the contract (docs/api.md) requires. Run against the three targets: Netlify (simulated on
 * its own rule engine), the edge function called directly, and the origin server.
 */
import { request as httpRequest } from 'node:http';
import { gunzipSync } from 'node:zlib';

export type Expected =
  /** A profile: 200, data.username lower-cased equals `user`, data.status as given. */
  | { status: 200; user: string; state: 'active' | 'suspended' }
  | { status: 200; creators: true }
  | { status: 400 | 404 | 405; code: 'USERNAME_REQUIRED' | 'USER_NOT_FOUND' | 'NOT_FOUND' | 'METHOD_NOT_ALLOWED' }
  /** Preflight: 204, no body, CORS headers. */
  | { status: 204; preflight: true }
  /** Not an API path: 404 and not a JSON API answer (other services own these on the same host). */
  | { status: 404; outside: true };

export interface Row {
  name: string;
  method: string;
  /** Path and query exactly as sent. */
  target: string;
  expected: Expected;
}

/** The sample store's users by state; `stored` is the letter case in the store. */
const USERS = [
  { stored: 'Alice', state: 'active' },
  { stored: 'Carol.Dev', state: 'active' },
  { stored: 'amy.lee', state: 'active' },
  { stored: 'dave_99', state: 'suspended' },
  { stored: 'Eve-Banned', state: 'suspended' },
  { stored: 'walter', state: 'suspended' },
  { stored: 'grace', state: 'inactive' },
  { stored: 'heidi', state: 'deleted' },
  { stored: 'nobody-here', state: 'unknown' },
  { stored: 'judy smith', state: 'unpublishable' },
] as const;

const swapCase = (s: string) => [...s].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join('');
const CASES: [string, (s: string) => string][] = [
  ['lower', (s) => s.toLowerCase()],
  ['UPPER', (s) => s.toUpperCase()],
  ['swapped', (s) => swapCase(s.toLowerCase()).replace(/^./, (c) => c.toLowerCase())],
  ['as stored', (s) => s],
];

const PATH_FORMS: [string, (u: string) => string][] = [
  ['path', (u) => `/api/v1/users/${encodeURIComponent(u)}`],
  ['alias', (u) => `/service-api/v1/users/${encodeURIComponent(u)}`],
  ['query', (u) => `/api/v1/users?username=${encodeURIComponent(u)}`],
];

const NOT_FOUND_USER = { status: 404, code: 'USER_NOT_FOUND' } as const;

export function requestTable(): Row[] {
  const rows: Row[] = [];
  for (const user of USERS) {
    for (const [caseName, toCase] of CASES) {
      for (const [formName, form] of PATH_FORMS) {
        const expected: Expected =
          user.state === 'active' || user.state === 'suspended'
            ? { status: 200, user: user.stored.toLowerCase(), state: user.state }
            : NOT_FOUND_USER;
        rows.push({
          name: `${formName} ${user.state} ${user.stored} ${caseName}`,
          method: 'GET',
          target: form(toCase(user.stored)),
          expected,
        });
      }
    }
  }
  const add = (name: string, target: string, expected: Expected, method = 'GET') => rows.push({ name, method, target, expected });
  const required = { status: 400, code: 'USERNAME_REQUIRED' } as const;
  const notFound = { status: 404, code: 'NOT_FOUND' } as const;
  const alice = { status: 200, user: 'alice', state: 'active' } as const;

  add('query missing', '/api/v1/users', required);
  add('query missing, trailing slash', '/api/v1/users/', required);
  add('query empty', '/api/v1/users?username=', required);
  add('query bare parameter', '/api/v1/users?username', required);
  add('query other parameter only', '/api/v1/users?user=alice', required);
  add('query parameter name is case-sensitive', '/api/v1/users?USERNAME=alice', required);
  add('query empty after a value (last wins)', '/api/v1/users?username=alice&username=', required);
  add('query repeated (last wins)', '/api/v1/users?username=nobody&username=ALICE', alice);
  add('query with other parameters', '/api/v1/users?x=1&username=Alice&y=2', alice);
  add('query on trailing-slash path', '/api/v1/users/?username=aLiCe', alice);
  add('query value with @', '/api/v1/users?username=%40alice', NOT_FOUND_USER);
  add('query value with a slash', '/api/v1/users?username=a%2Fb', NOT_FOUND_USER);
  add('query value ..', '/api/v1/users?username=..', NOT_FOUND_USER);
  add('query value of 65 characters', `/api/v1/users?username=${'a'.repeat(65)}`, NOT_FOUND_USER);
  add('query value with a space', '/api/v1/users?username=Judy%20Smith', NOT_FOUND_USER);
  add('no query form on the alias', '/service-api/v1/users?username=alice', NOT_FOUND_USER);
  add('query string on a profile path is ignored', '/api/v1/users/alice?username=bob', alice);
  add('64-character username, mixed case', `/api/v1/users/Sybil-${'x'.repeat(58)}`, {
    status: 200,
    user: `sybil-${'x'.repeat(58)}`,
    state: 'active',
  });

  add('creators', '/service-api/v1/creators', { status: 200, creators: true });
  add('creators with a query', '/service-api/v1/creators?active=false', { status: 200, creators: true });
  add('creators on the other prefix', '/api/v1/creators', notFound);
  add('creators in upper case (paths are case-sensitive)', '/service-api/v1/CREATORS', notFound);

  add('alias folder itself', '/service-api/v1/users', NOT_FOUND_USER);
  add('alias folder with slash', '/service-api/v1/users/', NOT_FOUND_USER);
  add('deeper than a user', '/api/v1/users/alice/badges', NOT_FOUND_USER);
  add('deeper than a user, upper case', '/api/v1/users/ALICE/badges', NOT_FOUND_USER);
  add('deeper than a user on the alias', '/service-api/v1/users/Alice/x', NOT_FOUND_USER);
  add('profile with trailing slash', '/api/v1/users/alice/', NOT_FOUND_USER);
  add('dot username', '/api/v1/users/.hidden', NOT_FOUND_USER);
  add('unpublishable username (65 characters)', `/api/v1/users/trent-${'x'.repeat(59)}`, NOT_FOUND_USER);

  add('API prefix itself', '/api/v1', notFound);
  add('API prefix with slash', '/api/v1/', notFound);
  add('unknown API path', '/api/v1/nope', notFound);
  add('unknown nested API path', '/api/v1/nope/deeper', notFound);
  add('unknown service-api path', '/service-api/v1/nope', notFound);
  add('service-api prefix itself', '/service-api/v1', notFound);
  add('v2 is not ours', '/api/v2/users/alice', { status: 404, outside: true });
  add('avatar service is not ours', '/api/avatar?u=alice', { status: 404, outside: true });
  add('decoration service is not ours', '/api/decoration?f=halo_gold.png', { status: 404, outside: true });
  add('site root is not ours', '/', { status: 404, outside: true });
  add('prefix in upper case is not ours', '/API/v1/users/alice', { status: 404, outside: true });
  add('bookkeeping folder is never served', '/.profile-snapshot/manifest', { status: 404, outside: true });

  // Methods, where Netlify runs code and so can see them: mixed-case paths and the query form.
  for (const target of [
    '/api/v1/users?username=alice',
    '/api/v1/users/Alice',
    '/service-api/v1/users/DAVE_99',
    '/api/v1/users/NOBODY',
    '/api/v1/users',
  ]) {
    add(`OPTIONS ${target}`, target, { status: 204, preflight: true }, 'OPTIONS');
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH'])
      add(`${method} ${target}`, target, { status: 405, code: 'METHOD_NOT_ALLOWED' }, method);
  }
  add('HEAD profile mixed case', '/api/v1/users/ALICE', { status: 200, user: 'alice', state: 'active' }, 'HEAD');
  add('HEAD query miss', '/api/v1/users?username=Nobody', NOT_FOUND_USER, 'HEAD');
  add('HEAD lower-case profile', '/api/v1/users/alice', alice, 'HEAD');
  add('HEAD unknown API path', '/api/v1/nope', notFound, 'HEAD');
  return rows;
}

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The body's bytes as sent (raw HTTP only: a gzip answer is not decoded). */
  raw?: Buffer;
}

/** One raw HTTP request (node:http sends the target exactly as given, no URL normalisation). */
export function send(origin: string, method: string, target: string, headers: Record<string, string> = {}): Promise<Answer> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, method, path: target, headers: { connection: 'close', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const h: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h[k] = Array.isArray(v) ? v.join(', ') : v;
        const raw = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: h, body: raw.toString('utf8'), raw });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** From a fetch Response (the edge function called directly). */
export async function fromResponse(response: Response): Promise<Answer> {
  const headers: Record<string, string> = {};
  response.headers.forEach((v, k) => {
    headers[k] = v;
  });
  return { status: response.status, headers, body: response.body === null ? '' : await response.text() };
}

/** The contract's headers, named as the origin sends them, in its order. */
export const CONTRACT_NAMES = [
  'Content-Type',
  'Access-Control-Allow-Origin',
  'Access-Control-Allow-Methods',
  'Cache-Control',
  'X-Content-Type-Options',
];

export const CONTRACT = {
  'content-type': 'application/json; charset=utf-8',
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, OPTIONS',
  'cache-control': 'public, s-maxage=30, stale-while-revalidate=60',
  'x-content-type-options': 'nosniff',
};

/** Every row through one target: one line per row that did not answer as expected (none when all did). */
export async function tableFailures(answer: (row: Row) => Promise<Answer>, rows: Row[] = requestTable()): Promise<string[]> {
  const failures: string[] = [];
  for (const row of rows) {
    const problems = check(row, await answer(row));
    if (problems.length > 0) failures.push(`${row.method} ${row.target} (${row.name}): ${problems.join('; ')}`);
  }
  return failures;
}

/** Every difference between an answer and the row's expectation; empty when it matches. */
export function check(row: Row, answer: Answer): string[] {
  const problems: string[] = [];
  const e = row.expected;
  if (answer.status !== e.status) problems.push(`status ${answer.status}, expected ${e.status}`);
  if ('outside' in e) {
    if ((answer.headers['content-type'] ?? '').includes('application/json'))
      problems.push('a path other services own was answered as JSON');
    return problems;
  }
  for (const [name, value] of Object.entries(CONTRACT)) {
    if (answer.headers[name] !== value)
      problems.push(`header ${name}: ${JSON.stringify(answer.headers[name])}, expected ${JSON.stringify(value)}`);
  }
  if ('preflight' in e) {
    if (answer.body !== '') problems.push('a preflight answer has a body');
    return problems;
  }
  if (row.method === 'HEAD') {
    if (answer.body !== '') problems.push('HEAD answered with a body');
    return problems;
  }
  let json: {
    success?: boolean;
    data?: { username?: string; status?: string } | { status?: string }[];
    error?: { code?: string; status?: number };
  };
  try {
    json = JSON.parse(answer.body);
  } catch {
    problems.push(`body is not JSON: ${answer.body.slice(0, 80)}`);
    return problems;
  }
  if ('code' in e) {
    if (json.success !== false || json.error?.code !== e.code || json.error?.status !== e.status)
      problems.push(`error ${JSON.stringify(json.error)}, expected ${e.code}`);
  } else if ('creators' in e) {
    if (json.success !== true || !Array.isArray(json.data) || json.data.length === 0 || json.data.some((u) => u.status !== 'active'))
      problems.push('not the creators list');
  } else if ('user' in e) {
    const data = json.data as { username?: string; status?: string } | undefined;
    if (json.success !== true || data?.username?.toLowerCase() !== e.user || data?.status !== e.state)
      problems.push(`data ${JSON.stringify(data?.username)} ${data?.status}, expected ${e.user} ${e.state}`);
  }
  return problems;
}

/**
 * How a host answers the creators list per Accept-Encoding: the gzip variant, decoding to exactly
 * `list`, with Content-Encoding and its own ETag, length and 304 to a client that accepts gzip; the
 * identity bytes otherwise; Vary: Accept-Encoding on both; the variant never under a path of its own.
 * One line per problem (none when all is right).
 */
export async function gzipNegotiationFailures(
  request: (method: string, target: string, headers?: Record<string, string>) => Promise<Answer>,
  list: Buffer,
  options: { headLength?: boolean } = {},
): Promise<string[]> {
  const problems: string[] = [];
  const expect = (ok: boolean, what: string) => {
    if (!ok) problems.push(what);
  };
  const path = '/service-api/v1/creators';
  const gzipped = async (accept: string) => {
    const a = await request('GET', path, { 'accept-encoding': accept });
    expect(a.status === 200, `${accept}: status ${a.status}`);
    expect(a.headers['content-encoding'] === 'gzip', `${accept}: Content-Encoding ${a.headers['content-encoding']}`);
    expect(/accept-encoding/i.test(a.headers.vary ?? ''), `${accept}: Vary ${a.headers.vary}`);
    expect(a.headers['content-type'] === CONTRACT['content-type'], `${accept}: Content-Type ${a.headers['content-type']}`);
    let decoded: Buffer | undefined;
    try {
      decoded = gunzipSync(a.raw ?? Buffer.alloc(0));
    } catch {
      decoded = undefined;
    }
    expect(decoded?.equals(list) === true, `${accept}: the body does not gunzip to the list`);
    if (a.headers['content-length'] !== undefined)
      expect(
        Number(a.headers['content-length']) === a.raw?.length,
        `${accept}: Content-Length ${a.headers['content-length']} for ${a.raw?.length} bytes`,
      );
    return a;
  };
  const identity = async (accept: string | undefined) => {
    const a = await request('GET', path, accept === undefined ? {} : { 'accept-encoding': accept });
    const label = accept ?? '(no Accept-Encoding)';
    expect(a.status === 200, `${label}: status ${a.status}`);
    expect(a.headers['content-encoding'] === undefined, `${label}: Content-Encoding ${a.headers['content-encoding']}`);
    expect(/accept-encoding/i.test(a.headers.vary ?? ''), `${label}: Vary ${a.headers.vary}`);
    expect(a.raw?.equals(list) === true, `${label}: the body is not the list's bytes`);
    return a;
  };
  const zipped = await gzipped('gzip, deflate, br');
  const plain = await identity(undefined);
  await identity('identity');
  await identity('gzip;q=0, identity');
  expect(
    zipped.headers.etag !== undefined && zipped.headers.etag !== plain.headers.etag,
    `ETags ${zipped.headers.etag} and ${plain.headers.etag}`,
  );
  const again = await request('GET', path, { 'accept-encoding': 'gzip', 'if-none-match': zipped.headers.etag ?? '' });
  expect(again.status === 304, `If-None-Match of the gzip ETag, gzip accepted: status ${again.status}`);
  const other = await request('GET', path, { 'if-none-match': zipped.headers.etag ?? '' });
  expect(other.status === 200 && other.raw?.equals(list) === true, `If-None-Match of the gzip ETag, identity: status ${other.status}`);
  const head = await request('HEAD', path, { 'accept-encoding': 'gzip' });
  expect(head.status === 200 && head.headers['content-encoding'] === 'gzip', `HEAD: ${head.status} ${head.headers['content-encoding']}`);
  expect((head.raw?.length ?? 0) === 0, 'HEAD: a body');
  if (options.headLength !== false)
    expect(head.headers['content-length'] === String(zipped.raw?.length), `HEAD: Content-Length ${head.headers['content-length']}`);
  for (const accept of ['gzip', '']) {
    const direct = await request('GET', '/service-api/v1/.creators.gz', { 'accept-encoding': accept });
    expect(direct.status === 404, `the variant's own path (${accept || 'identity'}): status ${direct.status}`);
  }
  return problems;
}
