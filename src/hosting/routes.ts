/**
 * The route table: the single description of every public path form of the API, the file that
 * answers it, the headers every answer carries and the error answers. `netlify.toml`, the Netlify
 * Edge Function's routing data, the origin server's router, the Cloudflare Worker and the CloudFront
 * Function are all derived from it (./netlify-config.ts, ./origin.ts, ./cloudflare-config.ts,
 * ./aws-config.ts), so the hosting targets cannot drift apart.
 *
 * The semantics below copy what Netlify's production rule engine (netlify-redirector) does with the
 * rules we render, so that the origin server answers exactly like Netlify:
 *   - a rule `/x/*` also matches `/x` and `/x/`; a rule `/x` also matches `/x/`;
 *   - a query condition `{username = ":username"}` is skipped when the parameter is absent, matches
 *     an empty value, and takes the last value when the parameter repeats;
 *   - path matching is case-sensitive, so only the username part is ever compared case-insensitively,
 *     and that is done by code (the edge function, the origin router), never by a rule.
 */
import { CANONICAL_USERNAME, CREATORS_FILE, errorFile, OPENAPI_FILE, PROFILE_DIRS } from '../core/layout.js';
import { ERRORS, errorBody, type ErrorCode } from '../render/documents.js';

/** The four headers of the contract (spec 4.3), on every answer, errors included, plus nosniff. */
export const CONTRACT_HEADERS = {
  'Content-Type': 'application/json; charset=utf-8',
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'GET, OPTIONS',
  'Cache-Control': 'public, s-maxage=30, stale-while-revalidate=60',
  // A later issue asks for it on both targets: an API answer must never be sniffed into HTML.
  'X-Content-Type-Options': 'nosniff',
} as const;

/**
 * How long a host's own cache (the Worker's Cache API) may keep a document: the contract's
 * shared-cache lifetime, with no stale serving on top, so a change shows within s-maxage there too.
 */
export const EDGE_CACHE_CONTROL = CONTRACT_HEADERS['Cache-Control'].replace(/,\s*stale-while-revalidate=\d+/, '');

/**
 * Added to the answer of a CORS preflight (OPTIONS, 204). Browsers only preflight non-simple
 * requests (a custom header, say); allowing any request header keeps such clients working, and the
 * max age spares them a preflight per request.
 */
export const PREFLIGHT_HEADERS = {
  'Access-Control-Allow-Headers': '*',
  'Access-Control-Max-Age': '86400',
} as const;

/** Sent with the 405 answer (RFC 9110 requires Allow on a 405). */
export const ALLOW_HEADER = 'GET, HEAD, OPTIONS';

/**
 * The answer to a path that is not the API's, on a host that has no origin to pass it to: a plain
 * 404 that no client can take for an API answer (other services own such paths on the real host).
 */
export const OUTSIDE_HEADERS = {
  'Content-Type': 'text/plain; charset=utf-8',
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': CONTRACT_HEADERS['Cache-Control'],
} as const;
export const OUTSIDE_BODY = 'Not Found\n';

/**
 * The data part of each error document, for hosts that must answer an error without reading the
 * snapshot (a CloudFront Function cannot read the bucket) or whose snapshot lost its error files.
 * Rendered into a whole document by `errorAnswerBody`, byte for byte what `errorDocument` writes.
 */
export const ERROR_BODIES: Record<ErrorCode, string> = Object.fromEntries(
  (Object.keys(ERRORS) as ErrorCode[]).map((code) => [code, errorBody(ERRORS[code])]),
) as Record<ErrorCode, string>;

/**
 * A whole error document produced at answer time (`meta.timestamp` is the answer's time, as on the
 * origin's fallback). Written in ES 5.1 because the CloudFront Function carries its source.
 */
export function errorAnswerBody(code: ErrorCode, isoTimestamp: string): string {
  return '{"success":false,"error":' + ERROR_BODIES[code] + ',"meta":{"timestamp":"' + isoTimestamp + '","version":"v1","executionTimeMs":0}}';
}

/**
 * Usernames as published on disk (publish/layout.ts). Any other name can never have a file, so it is
 * a miss without looking, and a name like `..` can never become a path. Re-exported: the edge
 * function's routing module embeds it by name.
 */
export { CANONICAL_USERNAME };

export interface ProfileAlias {
  /** URL path of the folder, e.g. `/api/v1/users`; a profile is `<path>/<username>`. */
  path: string;
  /** Folder under the out dir holding the canonical files, e.g. `api/v1/users`. */
  dir: string;
}

export interface RouteTable {
  /** API prefixes: any other path under them is NOT_FOUND (never the whole `/api`: other services own `/api/avatar`, `/api/decoration`). */
  prefixes: string[];
  /** Operation 1 by path, once per alias. Anything else under the alias folder is USER_NOT_FOUND. */
  profiles: ProfileAlias[];
  /** Operation 1 by query string: `<path>?<param>=<username>`, answered from `dir`. */
  query: { path: string; param: string; dir: string };
  /** Plain files: the creators list (operation 2) and the contract (OpenAPI document). */
  files: { path: string; file: string }[];
  /** The error answers: status and the static document that is the body. */
  errors: Record<ErrorCode, { status: number; file: string }>;
  headers: Record<string, string>;
}

function buildTable(): RouteTable {
  const profiles = PROFILE_DIRS.map((dir) => ({ path: `/${dir}`, dir }));
  const prefixes = [...new Set(PROFILE_DIRS.map((dir) => `/${dir.slice(0, dir.lastIndexOf('/'))}`))];
  const errors = Object.fromEntries(
    (Object.keys(ERRORS) as ErrorCode[]).map((code) => [code, { status: ERRORS[code].status, file: errorFile(code) }]),
  ) as RouteTable['errors'];
  const apiUsers = profiles.find((p) => p.path === '/api/v1/users');
  if (!apiUsers) throw new Error('bug: the query-string form needs the /api/v1/users alias');
  return {
    prefixes,
    profiles,
    query: { path: apiUsers.path, param: 'username', dir: apiUsers.dir },
    files: [{ path: `/${CREATORS_FILE}`, file: CREATORS_FILE }, { path: `/${OPENAPI_FILE}`, file: OPENAPI_FILE }],
    errors,
    headers: { ...CONTRACT_HEADERS },
  };
}

export const ROUTES: RouteTable = buildTable();

/** What a request resolves to, before any file is looked at. */
export type Resolution =
  /** A profile: `file` exists when the user is published; when it does not, the answer is USER_NOT_FOUND. */
  | { kind: 'profile'; file: string; username: string }
  /** A plain file of the table (creators list). */
  | { kind: 'file'; file: string }
  | { kind: 'error'; code: ErrorCode }
  /** Not an API path: not ours to answer (other services share the host on Netlify). */
  | { kind: 'outside' };

/*
 * The resolver below is emitted by its source into every host that runs code: the Netlify edge
 * function, the Cloudflare Worker and the CloudFront Function, whose runtime (cloudfront-js-2.0)
 * has ES 5.1 plus a few later features. So it is written in ES 5.1 (var, indexed and for-in loops,
 * indexOf, string concatenation, no default parameters) and a test parses it as such.
 */

/** `/x`, `/x/` and `/x/...` are "under" `/x`, as for a Netlify rule `/x/*`. */
export function under(path: string, prefix: string): boolean {
  return path === prefix || path.indexOf(prefix + '/') === 0;
}

/** The profile answer for a username as requested (any letter case). */
export function profile(dir: string, requested: string): Resolution {
  var username = requested.toLowerCase();
  if (!CANONICAL_USERNAME.test(username)) return { kind: 'error', code: 'USER_NOT_FOUND' };
  return { kind: 'profile', file: dir + '/' + username, username: username };
}

/** The query as each host has it: URLSearchParams, or CloudFront's parsed query string (cloudfront-function.ts). */
export interface QueryValues {
  getAll(name: string): string[];
}

/**
 * Resolves a request path (already percent-decoded, as Netlify's rule engine sees it) and query.
 * Pure: the same function drives the origin server and, by its source, every other host.
 */
export function resolveRoute(path: string, query: QueryValues, table?: RouteTable): Resolution {
  var routes = table || ROUTES;
  var i;
  for (i = 0; i < routes.files.length; i++) if (path === routes.files[i]!.path) return { kind: 'file', file: routes.files[i]!.file };
  // The error documents are plain static files of the site on Netlify (rewrite targets); the same here.
  for (var code in routes.errors) if (path === '/' + routes.errors[code as ErrorCode].file) return { kind: 'file', file: routes.errors[code as ErrorCode].file };
  // The query form: Netlify treats `/api/v1/users/` as `/api/v1/users`.
  if (path === routes.query.path || path === routes.query.path + '/') {
    var values = query.getAll(routes.query.param);
    var value = values[values.length - 1];
    if (value === undefined || value === '') return { kind: 'error', code: 'USERNAME_REQUIRED' };
    return profile(routes.query.dir, value);
  }
  for (i = 0; i < routes.profiles.length; i++) {
    var alias = routes.profiles[i]!;
    if (!under(path, alias.path)) continue;
    var rest = path.slice(alias.path.length + 1);
    if (rest === '' || rest.indexOf('/') !== -1) return { kind: 'error', code: 'USER_NOT_FOUND' };
    return profile(alias.dir, rest);
  }
  for (i = 0; i < routes.prefixes.length; i++) if (under(path, routes.prefixes[i]!)) return { kind: 'error', code: 'NOT_FOUND' };
  return { kind: 'outside' };
}

/** The error documents as URL paths (they are static files of the site, reachable as such). */
export function errorPath(code: ErrorCode, table: RouteTable = ROUTES): string {
  return `/${table.errors[code].file}`;
}
