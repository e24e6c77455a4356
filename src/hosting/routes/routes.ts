/**
 * The route table: the single description of every public path form of the API, the file that
 * answers it, the headers every answer carries and the error answers. `netlify.toml`, the Netlify
 * Edge Function's routing data, the origin server's router, the Cloudflare Worker and the CloudFront
 * Function are all derived from it (../hosts/netlify-config.ts, ../serve/origin.ts, ../hosts/cloudflare-config.ts,
 * ../hosts/aws-config.ts), so the hosting targets cannot drift apart.
 *
 * The semantics below copy what Netlify's production rule engine (netlify-redirector) does with the
 * rules we render, so that the origin server answers exactly like Netlify:
 *   - a rule `/x/*` also matches `/x` and `/x/`; a rule `/x` also matches `/x/`;
 *   - a query condition `{username = ":username"}` is skipped when the parameter is absent, matches
 *     an empty value, and takes the last value when the parameter repeats;
 *   - path matching is case-sensitive, so only the username part is ever compared case-insensitively,
 *     and that is done by code (the edge function, the origin router), never by a rule.
 */
import { CANONICAL_USERNAME, CREATORS_FILE, CREATORS_GZIP_FILE, errorFile, OPENAPI_FILE, PROFILE_DIRS } from '../../core/layout.js';
import { ERRORS, errorBody, type ErrorCode } from '../../render/documents.js';

/** The four headers of the contract (docs/api.md, "Headers"), on every answer, errors included, plus nosniff. */
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
 * Usernames as published on disk (core/layout.ts). Any other name can never have a file, so it is
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
  /**
   * Plain files: the creators list (operation 2) and the contract (OpenAPI document). `gzip` names
   * a file's gzip variant, sent with `Content-Encoding: gzip` to clients that accept it (see
   * acceptsGzip in ./routing.js); its answers, either encoding, carry `Vary: Accept-Encoding`.
   */
  files: { path: string; file: string; gzip?: string }[];
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
    files: [
      { path: `/${CREATORS_FILE}`, file: CREATORS_FILE, gzip: CREATORS_GZIP_FILE },
      { path: `/${OPENAPI_FILE}`, file: OPENAPI_FILE },
    ],
    errors,
    headers: { ...CONTRACT_HEADERS },
  };
}

export const ROUTES: RouteTable = buildTable();

/** What a request resolves to, before any file is looked at. */
export type Resolution =
  /** A profile: `file` exists when the user is published; when it does not, the answer is USER_NOT_FOUND. */
  | { kind: 'profile'; file: string; username: string }
  /** A plain file of the table (creators list); `gzip`, its gzip variant when it has one. */
  | { kind: 'file'; file: string; gzip?: string }
  | { kind: 'error'; code: ErrorCode }
  /** Not an API path: not ours to answer (other services share the host on Netlify). */
  | { kind: 'outside' };

/** The query as each host has it: URLSearchParams, or CloudFront's parsed query string (../hosts/cloudfront-handler.js). */
export interface QueryValues {
  getAll(name: string): string[];
}

/** Sent with both encodings of a file that has a gzip variant: a shared cache keeps them apart. */
export const VARY_HEADER = { Vary: 'Accept-Encoding' } as const;

/** The error documents as URL paths (they are static files of the site, reachable as such). */
export function errorPath(code: ErrorCode, table: RouteTable = ROUTES): string {
  return `/${table.errors[code].file}`;
}
