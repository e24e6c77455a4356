/**
 * The Cloudflare Worker's request handling over an R2 bucket that `publish` fills. Not run from
 * here: `cloudflare config` emits these functions by their source into cloudflare/worker.js, after
 * the routing module (./routing-source.ts), so each may use only web-standard globals, the routing
 * module's names (ROUTES, resolveRoute...) and the other functions of this file.
 *
 * It answers exactly as `serve` does. Keys are only ever built from what the route table resolves
 * (a canonical username under a users folder, a file of the table, an error document), so no
 * spelling or encoding of a path can reach `<PREFIX>/.profile-snapshot/` or any other key.
 */
import type { ErrorCode } from '../render/documents.js';
import { ALLOW_HEADER, EDGE_CACHE_CONTROL, OUTSIDE_BODY, OUTSIDE_HEADERS, PREFLIGHT_HEADERS, ROUTES, errorAnswerBody, resolveRoute, type Resolution } from './routes.js';

/** What the Worker needs of an R2 object (R2Object / R2ObjectBody). */
export interface StoredObject {
  httpEtag: string;
  body?: ReadableStream<Uint8Array>;
}

/** What the Worker needs of its R2 binding. */
export interface ObjectBucket {
  get(key: string): Promise<StoredObject | null>;
  head(key: string): Promise<StoredObject | null>;
}

interface EdgeCache {
  match(request: Request): Promise<Response | undefined>;
  put(request: Request, response: Response): Promise<void>;
}

/** The bindings and variables of cloudflare/wrangler.toml. */
export interface WorkerEnv {
  PROFILES: ObjectBucket;
  /** Key prefix the snapshot was published under (`publish --to s3://bucket/<prefix>`); empty for none. */
  PREFIX?: string;
  /** `off` reads R2 on every request; anything else keeps documents in the data centre's cache. */
  CACHE?: string;
  /** `origin` passes paths that are not the API's to the zone's origin; anything else answers a plain 404. */
  OUTSIDE?: string;
}

export interface WorkerContext {
  waitUntil(promise: Promise<unknown>): void;
}

/** A document found in the cache or the bucket: its entity tag and, for GET, its bytes. */
interface Found {
  etag: string;
  body: ReadableStream<Uint8Array> | null;
}

export async function handleRequest(request: Request, env: WorkerEnv, ctx: WorkerContext): Promise<Response> {
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
export function routeOf(url: URL): Resolution {
  try {
    return resolveRoute(decodeURIComponent(url.pathname), url.searchParams);
  } catch {
    return { kind: 'error', code: 'NOT_FOUND' };
  }
}

export function answerOutside(request: Request, env: WorkerEnv): Promise<Response> | Response {
  if (env.OUTSIDE === 'origin') return fetch(request);
  return new Response(request.method === 'HEAD' ? null : OUTSIDE_BODY, { status: 404, headers: OUTSIDE_HEADERS });
}

/** The error document from the bucket with the error's status; rendered here if the bucket lost it. */
export async function answerError(request: Request, url: URL, env: WorkerEnv, ctx: WorkerContext, code: ErrorCode, extra: Record<string, string> = {}): Promise<Response> {
  const status = ROUTES.errors[code].status;
  const found = await readDocument(request, url, env, ctx, ROUTES.errors[code].file);
  if (found) return answerDocument(request, found, status, false, extra);
  const body = request.method === 'HEAD' ? null : errorAnswerBody(code, new Date().toISOString());
  return new Response(body, { status, headers: { ...ROUTES.headers, ...extra } });
}

/**
 * A document with the contract headers. Only a 200 carries its ETag and may become a 304: a
 * conditional request never turns an error into "not modified".
 */
export async function answerDocument(request: Request, found: Found, status: number, conditional: boolean, extra: Record<string, string> = {}): Promise<Response> {
  const headers: Record<string, string> = { ...ROUTES.headers, ...extra };
  if (conditional) headers.ETag = found.etag;
  const notModified = conditional && etagMatches(request.headers.get('If-None-Match'), found.etag);
  if (request.method === 'HEAD' || notModified) {
    await found.body?.cancel();
    return new Response(null, { status: notModified ? 304 : status, headers });
  }
  return new Response(found.body, { status, headers });
}

/** If-None-Match's weak comparison (RFC 9110 13.1.2): `*`, or any listed tag with the same opaque value. */
export function etagMatches(header: string | null, etag: string): boolean {
  if (header === null || etag === '') return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return header.split(',').some((tag) => tag.trim() === '*' || opaque(tag) === opaque(etag));
}

/** The object's key under the bucket: `<PREFIX>/<file>`, as `publish --to s3://<bucket>/<PREFIX>` wrote it. */
export function objectKey(env: WorkerEnv, file: string): string {
  const prefix = (env.PREFIX ?? '').replace(/^\/+|\/+$/g, '');
  return prefix === '' ? file : `${prefix}/${file}`;
}

/**
 * A document by its file under the snapshot, from the data centre's cache when it holds it, else
 * from R2 (then kept in the cache for the contract's s-maxage, in the background, so a published
 * change shows within it). The cache key
 * sits under the API prefix, at a path the route table never answers from a file, so it cannot
 * collide with anything the zone caches from an origin.
 */
export async function readDocument(request: Request, url: URL, env: WorkerEnv, ctx: WorkerContext, file: string): Promise<Found | null> {
  const key = objectKey(env, file);
  const cache = env.CACHE === 'off' ? undefined : (globalThis as { caches?: { default?: EdgeCache } }).caches?.default;
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
  ctx.waitUntil(cache.put(cacheKey, new Response(kept, { headers: { ...ROUTES.headers, 'Cache-Control': EDGE_CACHE_CONTROL, ETag: object.httpEtag } })));
  return { etag: object.httpEtag, body: answer };
}
