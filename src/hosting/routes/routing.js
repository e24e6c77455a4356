// @ts-check
/**
 * The routing every host runs: the origin server imports this module, and the Netlify edge
 * function, the Cloudflare Worker and the CloudFront Function embed the code between the markers
 * below, as they are written here (../hosts/routing-source.ts reads them). There the names imported below
 * (ROUTES, ERROR_BODIES, CANONICAL_USERNAME) are constants of the generated file.
 *
 * ES 5.1, because the CloudFront Function runtime (cloudfront-js-2.0) has little more: var, indexed
 * and for-in loops, indexOf, string concatenation, no default parameters. A test parses it as such.
 * The semantics copy Netlify's rule engine: see ./routes.ts.
 */
import { CANONICAL_USERNAME } from '../../core/layout.js';
import { ERROR_BODIES, ROUTES } from './routes.js';

/** @typedef {import('./routes.js').Resolution} Resolution */
/** @typedef {import('./routes.js').QueryValues} QueryValues */
/** @typedef {import('./routes.js').RouteTable} RouteTable */
/** @typedef {import('../../render/documents.js').ErrorCode} ErrorCode */

// ---- host code: routing ----
/**
 * `/x`, `/x/` and `/x/...` are "under" `/x`, as for a Netlify rule `/x/*`.
 * @param {string} path
 * @param {string} prefix
 */
function under(path, prefix) {
  return path === prefix || path.indexOf(prefix + '/') === 0;
}

/**
 * The profile answer for a username as requested (any letter case).
 * @param {string} dir
 * @param {string} requested
 * @returns {Resolution}
 */
function profile(dir, requested) {
  var username = requested.toLowerCase();
  if (!CANONICAL_USERNAME.test(username)) return { kind: 'error', code: 'USER_NOT_FOUND' };
  return { kind: 'profile', file: dir + '/' + username, username: username };
}

/**
 * Resolves a request path (already percent-decoded, as Netlify's rule engine sees it) and query
 * (anything with getAll). Pure.
 * @param {string} path
 * @param {QueryValues} query
 * @param {RouteTable} [table]
 * @returns {Resolution}
 */
function resolveRoute(path, query, table) {
  var routes = table || ROUTES;
  var i;
  for (i = 0; i < routes.files.length; i++) {
    var entry = routes.files[i];
    if (entry && path === entry.path)
      return entry.gzip ? { kind: 'file', file: entry.file, gzip: entry.gzip } : { kind: 'file', file: entry.file };
  }
  // The error documents are plain static files of the site on Netlify (rewrite targets); the same here.
  for (var code in routes.errors) {
    var error = routes.errors[/** @type {ErrorCode} */ (code)];
    if (path === '/' + error.file) return { kind: 'file', file: error.file };
  }
  // The query form: Netlify treats `/api/v1/users/` as `/api/v1/users`.
  if (path === routes.query.path || path === routes.query.path + '/') {
    var values = query.getAll(routes.query.param);
    var value = values[values.length - 1];
    if (value === undefined || value === '') return { kind: 'error', code: 'USERNAME_REQUIRED' };
    return profile(routes.query.dir, value);
  }
  for (i = 0; i < routes.profiles.length; i++) {
    var alias = routes.profiles[i];
    if (!alias || !under(path, alias.path)) continue;
    var rest = path.slice(alias.path.length + 1);
    if (rest === '' || rest.indexOf('/') !== -1) return { kind: 'error', code: 'USER_NOT_FOUND' };
    return profile(alias.dir, rest);
  }
  for (i = 0; i < routes.prefixes.length; i++) {
    var prefix = routes.prefixes[i];
    if (prefix !== undefined && under(path, prefix)) return { kind: 'error', code: 'NOT_FOUND' };
  }
  return { kind: 'outside' };
}

/**
 * Whether Accept-Encoding accepts gzip (RFC 9110 12.5.3): gzip with q > 0, else * with q > 0; no
 * header, no encoding.
 * @param {string | null | undefined} header
 */
function acceptsGzip(header) {
  var parts = (header || '').split(',');
  var gzip = -1;
  var any = -1;
  for (var i = 0; i < parts.length; i++) {
    var params = (parts[i] || '').toLowerCase().split(';');
    var coding = (params[0] || '').trim();
    var q = 1;
    for (var j = 1; j < params.length; j++) {
      var param = (params[j] || '').trim();
      if (param.indexOf('q=') === 0) q = Number(param.slice(2)) || 0;
    }
    if (coding === 'gzip' || coding === 'x-gzip') gzip = Math.max(gzip, q);
    else if (coding === '*') any = Math.max(any, q);
  }
  return gzip !== -1 ? gzip > 0 : any > 0;
}
// ---- end of host code ----

// ---- host code: answers ----
/**
 * A whole error document produced at answer time (`meta.timestamp` is the answer's time), byte for
 * byte what `errorDocument` writes, for hosts that cannot read the snapshot's error files.
 * @param {ErrorCode} code
 * @param {string} isoTimestamp
 */
function errorAnswerBody(code, isoTimestamp) {
  return (
    '{"success":false,"error":' + ERROR_BODIES[code] + ',"meta":{"timestamp":"' + isoTimestamp + '","version":"v1","executionTimeMs":0}}'
  );
}
// ---- end of host code ----

// ---- host code: conditional ----
/**
 * If-None-Match as RFC 9110 defines it (13.1.2), for every host that answers from the snapshot (the
 * origin on every path, serve/origin.ts and serve/cached-answers.ts; the Worker): a list of
 * entity-tags, or `*`, compared weakly (8.8.3.2: `W/"x"` and `"x"` match).
 *
 * A field value outside the grammar matches nothing: the request is answered as if it had no
 * condition (a 200 with the document). A full answer is never wrong, where a 304 on a value read
 * differently from the client could leave it with a document it does not hold.
 */

/**
 * One list element: optional whitespace, an entity-tag or nothing (the list syntax allows empty
 * elements), optional whitespace, then a comma or the end. `etagc` takes in commas, so the list
 * cannot be split on them. Global, not sticky (ES 2015): each element must start where the last one
 * ended. Shared: each call starts it at 0 and runs it to the end.
 */
var IF_NONE_MATCH_ELEMENT = /[\t ]*(?:((?:W\/)?"[\x21\x23-\x7e\x80-\xff]*")[\t ]*)?(?:,|$)/g;

/**
 * An entity-tag's opaque part: what weak comparison compares.
 * @param {string} tag
 */
function opaqueTag(tag) {
  return tag.slice(0, 2) === 'W/' ? tag.slice(2) : tag;
}

/**
 * Whether `header` (the If-None-Match value, several lines joined by ", "; null or undefined when
 * not sent) matches `etag`.
 * @param {string | null | undefined} header
 * @param {string} etag
 */
function matchesIfNoneMatch(header, etag) {
  if (header === undefined || header === null) return false;
  // The form a cache revalidating its copy sends.
  if (header === etag) return true;
  if (header.trim() === '*') return true;
  var wanted = opaqueTag(etag);
  var matched = false;
  IF_NONE_MATCH_ELEMENT.lastIndex = 0;
  while (IF_NONE_MATCH_ELEMENT.lastIndex < header.length) {
    var at = IF_NONE_MATCH_ELEMENT.lastIndex;
    var found = IF_NONE_MATCH_ELEMENT.exec(header);
    if (found === null || found.index !== at) return false;
    if (found[1] !== undefined && opaqueTag(found[1]) === wanted) matched = true;
  }
  return matched;
}
// ---- end of host code ----

export { acceptsGzip, errorAnswerBody, matchesIfNoneMatch, profile, resolveRoute, under };
