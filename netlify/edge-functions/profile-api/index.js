// @ts-check
/**
 * Netlify Edge Function `profile-api`: what rewrite rules cannot do (declared in netlify.toml, which
 * is rendered from the route table with its routing module ./routes.js):
 *   - usernames that are not lower case, in a path or in the query-string form: rules are
 *     case-sensitive and cannot lower-case, so code finds the canonical (lower-case) file;
 *   - the query-string form's misses: a rewrite's target is not run through the rules again, so a
 *     rule alone would answer Netlify's own 404 page instead of USER_NOT_FOUND.
 * It never runs for plain lower-case profile paths, which stay purely static.
 *
 * The canonical file is fetched from the site itself (a fresh request through Netlify's CDN, rules
 * and static files), so this code depends on nothing but the files the build wrote. Header rules of
 * netlify.toml do not apply to an edge function's answer: it sets the contract headers itself.
 * Dependency-free: web-standard Request, Response, URL and fetch only.
 */
import { ALLOW_HEADER, PREFLIGHT_HEADERS, ROUTES, errorPath, resolveRoute } from './routes.js';

/**
 * @param {Request} request
 * @param {{ next: () => Promise<Response> }} context
 * @returns {Promise<Response>}
 */
export default async function profileApi(request, context) {
  const url = new URL(request.url);
  /** @type {ReturnType<typeof resolveRoute>} */
  let route;
  try {
    route = resolveRoute(decodeURIComponent(url.pathname), url.searchParams);
  } catch {
    route = { kind: 'error', code: 'NOT_FOUND' };
  }
  // Not an API path: the declared patterns never send one here, but pass it on unchanged if they do.
  if (route.kind === 'outside') return context.next();

  if (request.method === 'OPTIONS') {
    return new Response(null, { status: 204, headers: { ...ROUTES.headers, ...PREFLIGHT_HEADERS } });
  }
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    return answerError(request, url, 'METHOD_NOT_ALLOWED', { Allow: ALLOW_HEADER });
  }
  if (route.kind === 'error') return answerError(request, url, /** @type {keyof typeof ROUTES.errors} */ (route.code));

  const found = await fetch(new URL(`/${route.file}`, url.origin), { headers: { accept: 'application/json' } });
  if (found.status === 200) return answer(request, found, 200);
  await found.body?.cancel();
  return answerError(request, url, route.kind === 'profile' ? 'USER_NOT_FOUND' : 'NOT_FOUND');
}

/**
 * @param {Request} request
 * @param {URL} url
 * @param {keyof typeof ROUTES.errors} code
 * @param {Record<string, string>} [extra]
 */
async function answerError(request, url, code, extra = {}) {
  const document = await fetch(new URL(errorPath(code), url.origin), { headers: { accept: 'application/json' } });
  if (document.status !== 200) {
    await document.body?.cancel();
    throw new Error(`profile-api: the error document ${errorPath(code)} answered ${document.status}; was the snapshot built?`);
  }
  return answer(request, document, ROUTES.errors[code].status, extra);
}

/**
 * The body of a fetched document with the contract headers and the route's status.
 * @param {Request} request
 * @param {Response} document
 * @param {number} status
 * @param {Record<string, string>} [extra]
 */
async function answer(request, document, status, extra = {}) {
  if (request.method === 'HEAD') {
    await document.body?.cancel();
    return new Response(null, { status, headers: { ...ROUTES.headers, ...extra } });
  }
  return new Response(document.body, { status, headers: { ...ROUTES.headers, ...extra } });
}
