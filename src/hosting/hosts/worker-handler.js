/**
 * The Cloudflare Worker's request handling over an R2 bucket that `publish` fills. Not run from
 * here: `cloudflare config` embeds the code between the markers into cloudflare/worker.js, as it is
 * written here, after the routing module (./routing-source.ts), so it may use only web-standard
 * globals and the routing module's names (ROUTES, resolveRoute, ...), imported below for reading.
 *
 * It answers exactly as `serve` does. Keys are only ever built from what the route table resolves
 * (a canonical username under a users folder, a file of the table, an error document), so no
 * spelling or encoding of a path can reach `<PREFIX>/.profile-snapshot/` or any other key.
 *
 * env (cloudflare/wrangler.toml): PROFILES, the R2 binding (get/head); PREFIX, the key prefix
 * `publish --to s3://bucket/<prefix>` used (empty for none); CACHE, `off` to read R2 on every
 * request; OUTSIDE, `origin` to pass paths that are not the API's to the zone's origin.
 */
import {
  ALLOW_HEADER,
  EDGE_CACHE_CONTROL,
  OUTSIDE_BODY,
  OUTSIDE_HEADERS,
  PREFLIGHT_HEADERS,
  ROUTES,
  VARY_HEADER,
} from '../routes/routes.js';
import { acceptsGzip, errorAnswerBody, matchesIfNoneMatch, resolveRoute } from '../routes/routing.js';

// ---- host code: worker ----
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
// ---- end of host code ----

export { handleRequest };
