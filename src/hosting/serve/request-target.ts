/**
 * From a request target (`req.url`) to what the route table says about it, for the origin server.
 *
 * Targets in general go through WHATWG URL parsing and percent-decoding, as Netlify's rule engine
 * sees them. Most real targets are plain (`/api/v1/users/Alice`, `/api/v1/users?username=bob`):
 * for those both steps change nothing, so they are split by hand, sparing a URL object per request.
 */
import type { QueryValues, Resolution, RouteTable } from '../routes/routes.js';
import { ROUTES } from '../routes/routes.js';
import { resolveRoute } from '../routes/routing.js';

/** A path with a dot segment, a backslash or NUL once decoded: a traversal attempt, never a route. */
const SUSPICIOUS = /(^|\/)\.\.?(\/|$)|\\|\0/;

/**
 * A target that URL parsing and decoding leave as it is: no percent sign, plus, backslash, fragment
 * or character that parsing would encode, and no leading `//` (parsed as a host). Dot segments,
 * which parsing would resolve, are checked apart (SUSPICIOUS).
 */
export const PLAIN_TARGET = /^\/(?!\/)[A-Za-z0-9_.~/-]*(\?[A-Za-z0-9_.~=&-]*)?$/;

/** Routes one request. Pure. */
export function routeRequest(rawUrl: string, table: RouteTable = ROUTES): Resolution {
  return PLAIN_TARGET.test(rawUrl) ? routePlainTarget(rawUrl, table) : routeParsed(rawUrl, table);
}

/** Routes a target already known to match PLAIN_TARGET (the quick path's heads are read so). Pure. */
export function routePlainTarget(target: string, table: RouteTable = ROUTES): Resolution {
  const mark = target.indexOf('?');
  const path = mark === -1 ? target : target.slice(0, mark);
  if (SUSPICIOUS.test(path)) return routeParsed(target, table);
  return resolveRoute(path, plainQuery(mark === -1 ? '' : target.slice(mark + 1)), table);
}

/** The query of a plain target, read as URLSearchParams reads it (nothing to decode). */
function plainQuery(query: string): QueryValues {
  return {
    getAll(name) {
      const values: string[] = [];
      for (const pair of query.split('&')) {
        if (pair === '') continue;
        const equals = pair.indexOf('=');
        if ((equals === -1 ? pair : pair.slice(0, equals)) === name) values.push(equals === -1 ? '' : pair.slice(equals + 1));
      }
      return values;
    },
  };
}

/** Any target: parsed and decoded as Netlify's rule engine sees it (exported for the tests). */
export function routeParsed(rawUrl: string, table: RouteTable): Resolution {
  // Only the path and query matter; a relative base keeps absolute-form targets (`GET http://x/...`) sane.
  let url: URL;
  try {
    url = new URL(rawUrl, 'http://origin.invalid');
  } catch {
    return { kind: 'error', code: 'NOT_FOUND' };
  }
  // WHATWG parsing has already resolved `..` and `%2e%2e` segments; decode the rest as Netlify's rule
  // engine does (the whole path once), so `%2f` and `%5c` are seen for what they are. The raw target
  // is decoded too, only to recognise a traversal attempt for what it is.
  let path: string;
  let raw: string;
  try {
    path = decodeURIComponent(url.pathname);
    raw = decodeURIComponent(rawUrl.split('?')[0] ?? '');
  } catch {
    return { kind: 'error', code: 'NOT_FOUND' };
  }
  const resolution = resolveRoute(path, url.searchParams, table);
  // A traversal attempt that does not land on an API route still gets the JSON 404, never a file.
  if (resolution.kind === 'outside' && (SUSPICIOUS.test(path) || SUSPICIOUS.test(raw))) {
    return { kind: 'error', code: 'NOT_FOUND' };
  }
  return resolution;
}
