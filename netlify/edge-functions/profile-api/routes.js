// GENERATED from the route table (src/hosting/routes/routes.ts) by `profile-snapshot netlify config`. Do not edit:
// a test fails when this file differs from what the table renders; regenerate it instead.
// @ts-nocheck

export const ROUTES = {
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
export const PREFLIGHT_HEADERS = {"Access-Control-Allow-Headers":"*","Access-Control-Max-Age":"86400"};
export const ALLOW_HEADER = "GET, HEAD, OPTIONS";
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
export function errorPath(code, table = ROUTES) { return `/${table.errors[code].file}`; }
export { resolveRoute };
