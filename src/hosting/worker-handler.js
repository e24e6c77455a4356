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
import { ALLOW_HEADER, EDGE_CACHE_CONTROL, OUTSIDE_BODY, OUTSIDE_HEADERS, PREFLIGHT_HEADERS, ROUTES } from './routes.js';
import { errorAnswerBody, resolveRoute } from './routing.js';

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
  const found = await readDocument(request, url, env, ctx, route.file);
  if (found) return answerDocument(request, found, 200, true);
  return answerError(request, url, env, ctx, route.kind === 'profile' ? 'USER_NOT_FOUND' : 'NOT_FOUND');
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
 * A document ({ etag, body }) with the contract headers. Only a 200 carries its ETag and may become
 * a 304: a conditional request never turns an error into "not modified".
 */
async function answerDocument(request, found, status, conditional, extra = {}) {
  const headers = { ...ROUTES.headers, ...extra };
  if (conditional) headers.ETag = found.etag;
  const notModified = conditional && etagMatches(request.headers.get('If-None-Match'), found.etag);
  if (request.method === 'HEAD' || notModified) {
    await found.body?.cancel();
    return new Response(null, { status: notModified ? 304 : status, headers });
  }
  return new Response(found.body, { status, headers });
}

/** If-None-Match's weak comparison (RFC 9110 13.1.2): `*`, or any listed tag with the same opaque value. */
function etagMatches(header, etag) {
  if (header === null || etag === '') return false;
  const opaque = (tag) => tag.trim().replace(/^W\//, '');
  return header.split(',').some((tag) => tag.trim() === '*' || opaque(tag) === opaque(etag));
}

/** The object's key under the bucket: `<PREFIX>/<file>`, as `publish --to s3://<bucket>/<PREFIX>` wrote it. */
function objectKey(env, file) {
  const prefix = (env.PREFIX ?? '').replace(/^\/+|\/+$/g, '');
  return prefix === '' ? file : `${prefix}/${file}`;
}

/**
 * A document by its file under the snapshot, from the data centre's cache when it holds it, else
 * from R2 (then kept in the cache for the contract's s-maxage, in the background, so a published
 * change shows within it). The cache key sits under the API prefix, at a path the route table never
 * answers from a file, so it cannot collide with anything the zone caches from an origin.
 */
async function readDocument(request, url, env, ctx, file) {
  const key = objectKey(env, file);
  const cache = env.CACHE === 'off' ? undefined : globalThis.caches?.default;
  const cacheKey = new Request(`${url.origin}${ROUTES.prefixes[0]}/.edge-cache/${key}`);
  if (cache) {
    const hit = await cache.match(cacheKey);
    if (hit) return { etag: hit.headers.get('ETag') ?? '', body: hit.body };
  }
  if (request.method === 'HEAD') {
    const head = await env.PROFILES.head(key);
    return head ? { etag: head.httpEtag, body: null } : null;
  }
  const object = await env.PROFILES.get(key);
  if (!object || !object.body) return null;
  if (!cache) return { etag: object.httpEtag, body: object.body };
  const [answer, kept] = object.body.tee();
  ctx.waitUntil(
    cache.put(cacheKey, new Response(kept, { headers: { ...ROUTES.headers, 'Cache-Control': EDGE_CACHE_CONTROL, ETag: object.httpEtag } })),
  );
  return { etag: object.httpEtag, body: answer };
}
// ---- end of host code ----

export { handleRequest };
