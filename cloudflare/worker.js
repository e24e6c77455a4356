// GENERATED from the route table (src/hosting/routes/routes.ts) by `profile-snapshot cloudflare config`. Do not edit:
// a test fails when this file differs from what the table renders; regenerate it instead.
//
// The public profile API from an R2 bucket filled by `profile-snapshot publish` (see docs/hosting.md).
// Bindings (wrangler.toml): PROFILES, the R2 bucket; PREFIX, the key prefix (no leading slash, empty
// for none); CACHE = "off" to read R2 on every request; OUTSIDE = "origin" to pass paths that are not
// the API's to the zone's origin instead of answering a plain 404.

const ROUTES = {
  "prefixes": [
    "/api/v1",
    "/service-api/v1"
  ],
  "profiles": [
    {
      "path": "/api/v1/users",
      "dir": "api/v1/users"
    },
    {
      "path": "/service-api/v1/users",
      "dir": "service-api/v1/users"
    }
  ],
  "query": {
    "path": "/api/v1/users",
    "param": "username",
    "dir": "api/v1/users"
  },
  "files": [
    {
      "path": "/service-api/v1/creators",
      "file": "service-api/v1/creators",
      "gzip": "service-api/v1/.creators.gz"
    },
    {
      "path": "/api/v1/openapi.json",
      "file": "api/v1/openapi.json"
    }
  ],
  "errors": {
    "USER_NOT_FOUND": {
      "status": 404,
      "file": "_errors/user-not-found.json"
    },
    "USERNAME_REQUIRED": {
      "status": 400,
      "file": "_errors/username-required.json"
    },
    "NOT_FOUND": {
      "status": 404,
      "file": "_errors/not-found.json"
    },
    "METHOD_NOT_ALLOWED": {
      "status": 405,
      "file": "_errors/method-not-allowed.json"
    }
  },
  "headers": {
    "Content-Type": "application/json; charset=utf-8",
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, OPTIONS",
    "Cache-Control": "public, s-maxage=30, stale-while-revalidate=60",
    "X-Content-Type-Options": "nosniff"
  }
};
const PREFLIGHT_HEADERS = {"Access-Control-Allow-Headers":"*","Access-Control-Max-Age":"86400"};
const ALLOW_HEADER = "GET, HEAD, OPTIONS";
const OUTSIDE_HEADERS = {"Content-Type":"text/plain; charset=utf-8","X-Content-Type-Options":"nosniff","Cache-Control":"public, s-maxage=30, stale-while-revalidate=60"};
const OUTSIDE_BODY = "Not Found\n";
const EDGE_CACHE_CONTROL = "public, s-maxage=30";
const VARY_HEADER = {"Vary":"Accept-Encoding"};
const ERROR_BODIES = {"USER_NOT_FOUND":"{\"status\":404,\"code\":\"USER_NOT_FOUND\",\"message\":\"No active or suspended profile has this username.\"}","USERNAME_REQUIRED":"{\"status\":400,\"code\":\"USERNAME_REQUIRED\",\"message\":\"The username query parameter is required and must not be empty.\"}","NOT_FOUND":"{\"status\":404,\"code\":\"NOT_FOUND\",\"message\":\"No API resource exists at this path.\"}","METHOD_NOT_ALLOWED":"{\"status\":405,\"code\":\"METHOD_NOT_ALLOWED\",\"message\":\"Only GET and OPTIONS are allowed.\"}"};
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
const CANONICAL_USERNAME = /^[a-z0-9_-][a-z0-9._-]{0,63}$/;
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
async function handleRequest(request, env, ctx) {
  const url = new URL(request.url);
  const route = routeOf(url);
  if (route.kind === 'outside') return answerOutside(request, env);
  if (request.method === 'OPTIONS') {
    return new Response(null, { status: 204, headers: { ...ROUTES.headers, ...PREFLIGHT_HEADERS } });
  }
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    return answerError(request, url, env, ctx, 'METHOD_NOT_ALLOWED', { Allow: ALLOW_HEADER });
  }
  if (route.kind === 'error') return answerError(request, url, env, ctx, route.code);
  if (route.kind === 'file' && route.gzip) return answerNegotiated(request, url, env, ctx, route);
  const found = await readDocument(request, url, env, ctx, route.file);
  if (found) return answerDocument(request, found, 200, true);
  return answerError(request, url, env, ctx, route.kind === 'profile' ? 'USER_NOT_FOUND' : 'NOT_FOUND');
}

/**
 * A file with a gzip variant: the variant's bytes as stored, with `Content-Encoding: gzip`, to a
 * client that accepts gzip; the file otherwise; `Vary: Accept-Encoding` on both. Each encoding is
 * its own R2 object, so its ETag, length and cache entry are its own. The client's own
 * Accept-Encoding is `request.cf.clientAcceptEncoding`: the runtime hands the Worker "br, gzip" in
 * the header (and compresses a plain answer itself for a client that accepts it).
 */
async function answerNegotiated(request, url, env, ctx, route) {
  if (acceptsGzip(request.cf?.clientAcceptEncoding ?? request.headers.get('Accept-Encoding'))) {
    const encoded = await readDocument(request, url, env, ctx, route.gzip);
    if (encoded) return answerDocument(request, encoded, 200, true, { ...VARY_HEADER, 'Content-Encoding': 'gzip' });
  }
  const found = await readDocument(request, url, env, ctx, route.file);
  if (found) return answerDocument(request, found, 200, true, VARY_HEADER);
  return answerError(request, url, env, ctx, 'NOT_FOUND');
}

/** The path decoded once, as Netlify's rule engine and the origin see it; a malformed escape is no route. */
function routeOf(url) {
  try {
    return resolveRoute(decodeURIComponent(url.pathname), url.searchParams);
  } catch {
    return { kind: 'error', code: 'NOT_FOUND' };
  }
}

function answerOutside(request, env) {
  if (env.OUTSIDE === 'origin') return fetch(request);
  return new Response(request.method === 'HEAD' ? null : OUTSIDE_BODY, { status: 404, headers: OUTSIDE_HEADERS });
}

/** The error document from the bucket with the error's status; rendered here if the bucket lost it. */
async function answerError(request, url, env, ctx, code, extra = {}) {
  const status = ROUTES.errors[code].status;
  const found = await readDocument(request, url, env, ctx, ROUTES.errors[code].file);
  if (found) return answerDocument(request, found, status, false, extra);
  const body = request.method === 'HEAD' ? null : errorAnswerBody(code, new Date().toISOString());
  return new Response(body, { status, headers: { ...ROUTES.headers, ...extra } });
}

/**
 * A document ({ etag, size, body }) with the contract headers. Only a 200 carries its ETag and may
 * become a 304: a conditional request never turns an error into "not modified". A body already
 * encoded (`Content-Encoding` in `extra`) goes out as it is: `encodeBody: 'manual'` keeps the
 * runtime from compressing it again.
 */
async function answerDocument(request, found, status, conditional, extra = {}) {
  const headers = { ...ROUTES.headers, ...extra };
  if (conditional) headers.ETag = found.etag;
  const encodeBody = extra['Content-Encoding'] ? 'manual' : 'automatic';
  const notModified = conditional && matchesIfNoneMatch(request.headers.get('If-None-Match'), found.etag);
  if (request.method === 'HEAD' || notModified) {
    await found.body?.cancel();
    if (!notModified && found.size !== undefined) headers['Content-Length'] = String(found.size);
    return new Response(null, { status: notModified ? 304 : status, headers, encodeBody });
  }
  return new Response(found.body, { status, headers, encodeBody });
}

/** The object's key under the bucket: `<PREFIX>/<file>`, as `publish --to s3://<bucket>/<PREFIX>` wrote it. */
function objectKey(env, file) {
  const prefix = (env.PREFIX ?? '').replace(/^\/+|\/+$/g, '');
  return prefix === '' ? file : `${prefix}/${file}`;
}

/**
 * Cloudflare caches no object larger than this outside Enterprise plans (the Cache API included):
 * a larger document (the creators list of a million profiles, uncompressed) is read from R2 for
 * every request; its gzip variant, a twelfth of it, is cached.
 */
const CACHEABLE_BYTES = 512 * 1024 * 1024;

/**
 * A document by its file under the snapshot, from the data centre's cache when it holds it, else
 * from R2 (then kept in the cache for the contract's s-maxage, in the background, so a published
 * change shows within it, unless it is past CACHEABLE_BYTES). The cache key sits under the API
 * prefix, at a path the route table never answers from a file, so it cannot collide with anything
 * the zone caches from an origin; each file (a gzip variant too) has its own. Cached bytes are kept
 * as they are stored, without Content-Encoding: the answer sets it.
 */
async function readDocument(request, url, env, ctx, file) {
  const key = objectKey(env, file);
  const cache = env.CACHE === 'off' ? undefined : globalThis.caches?.default;
  const cacheKey = new Request(`${url.origin}${ROUTES.prefixes[0]}/.edge-cache/${key}`);
  if (cache) {
    const hit = await cache.match(cacheKey);
    if (hit) return { etag: hit.headers.get('ETag') ?? '', size: sizeOf(hit), body: hit.body };
  }
  if (request.method === 'HEAD') {
    const head = await env.PROFILES.head(key);
    return head ? { etag: head.httpEtag, size: head.size, body: null } : null;
  }
  const object = await env.PROFILES.get(key);
  if (!object || !object.body) return null;
  if (!cache || object.size > CACHEABLE_BYTES) return { etag: object.httpEtag, size: object.size, body: object.body };
  const [answer, kept] = object.body.tee();
  ctx.waitUntil(
    cache.put(
      cacheKey,
      new Response(kept, {
        headers: { ...ROUTES.headers, 'Cache-Control': EDGE_CACHE_CONTROL, ETag: object.httpEtag, 'Content-Length': String(object.size) },
      }),
    ),
  );
  return { etag: object.httpEtag, size: object.size, body: answer };
}

/** A cached answer's length, when it says. */
function sizeOf(response) {
  const length = response.headers.get('Content-Length');
  return length === null ? undefined : Number(length);
}

export default {
  fetch(request, env, ctx) {
    return handleRequest(request, env, ctx);
  },
};
