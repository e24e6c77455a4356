// GENERATED from the route table (src/hosting/routes/routes.ts) by `profile-snapshot aws config`. Do not edit:
// a test fails when this file differs from what the table renders; regenerate it instead.
//
// CloudFront Function, viewer request, runtime cloudfront-js-2.0 (see docs/hosting.md). ES 5.1 only.

var ROUTES = {"prefixes":["/api/v1","/service-api/v1"],"profiles":[{"path":"/api/v1/users","dir":"api/v1/users"},{"path":"/service-api/v1/users","dir":"service-api/v1/users"}],"query":{"path":"/api/v1/users","param":"username","dir":"api/v1/users"},"files":[{"path":"/service-api/v1/creators","file":"service-api/v1/creators","gzip":"service-api/v1/.creators.gz"},{"path":"/api/v1/openapi.json","file":"api/v1/openapi.json"}],"errors":{"USER_NOT_FOUND":{"status":404,"file":"_errors/user-not-found.json"},"USERNAME_REQUIRED":{"status":400,"file":"_errors/username-required.json"},"NOT_FOUND":{"status":404,"file":"_errors/not-found.json"},"METHOD_NOT_ALLOWED":{"status":405,"file":"_errors/method-not-allowed.json"}},"headers":{"Content-Type":"application/json; charset=utf-8","Access-Control-Allow-Origin":"*","Access-Control-Allow-Methods":"GET, OPTIONS","Cache-Control":"public, s-maxage=30, stale-while-revalidate=60","X-Content-Type-Options":"nosniff"}};
var PREFLIGHT_HEADERS = {"Access-Control-Allow-Headers":"*","Access-Control-Max-Age":"86400"};
var ALLOW_HEADER = "GET, HEAD, OPTIONS";
var OUTSIDE_HEADERS = {"Content-Type":"text/plain; charset=utf-8","X-Content-Type-Options":"nosniff","Cache-Control":"public, s-maxage=30, stale-while-revalidate=60"};
var OUTSIDE_BODY = "Not Found\n";
var ERROR_BODIES = {"USER_NOT_FOUND":"{\"status\":404,\"code\":\"USER_NOT_FOUND\",\"message\":\"No active or suspended profile has this username.\"}","USERNAME_REQUIRED":"{\"status\":400,\"code\":\"USERNAME_REQUIRED\",\"message\":\"The username query parameter is required and must not be empty.\"}","NOT_FOUND":"{\"status\":404,\"code\":\"NOT_FOUND\",\"message\":\"No API resource exists at this path.\"}","METHOD_NOT_ALLOWED":"{\"status\":405,\"code\":\"METHOD_NOT_ALLOWED\",\"message\":\"Only GET and OPTIONS are allowed.\"}"};
var STATUS_TEXT = {"204":"No Content","400":"Bad Request","404":"Not Found","405":"Method Not Allowed"};
var CANONICAL_USERNAME = /^[a-z0-9_-][a-z0-9._-]{0,63}$/;
/** The function CloudFront calls (the name is CloudFront's convention). */
function handler(event) {
  var request = event.request;
  var route = routeOfRequest(request);
  if (route.kind === 'outside') return generated(request, 404, OUTSIDE_HEADERS, OUTSIDE_BODY);
  if (request.method === 'OPTIONS') return generated(request, 204, merged(ROUTES.headers, PREFLIGHT_HEADERS), '');
  if (request.method !== 'GET' && request.method !== 'HEAD') return errorResponse(request, 'METHOD_NOT_ALLOWED', { Allow: ALLOW_HEADER });
  if (route.kind === 'error') return errorResponse(request, route.code, {});
  // The one object the table names (a file's gzip variant, its own object, if the viewer accepts
  // gzip); no query (one cache entry per object) and no Range (a document is always sent whole).
  request.uri = '/' + (route.gzip && acceptsGzip(headerValue(request, 'accept-encoding')) ? route.gzip : route.file);
  request.querystring = {};
  delete request.headers['range'];
  return request;
}

/** A request header's value (lower-case name), or undefined. */
function headerValue(request, name) {
  var header = request.headers[name];
  return header ? header.value : undefined;
}

/** The path decoded once, as on every other host; a malformed escape is no route. */
function routeOfRequest(request) {
  var path;
  try {
    path = decodeURIComponent(request.uri);
  } catch (e) {
    return { kind: 'error', code: 'NOT_FOUND' };
  }
  return resolveRoute(path, cloudFrontQuery(request));
}

/**
 * The query as URLSearchParams reads it: from `rawQueryString()` (cloudfront-js-2.0) exactly; else
 * from the parsed object, exact but for the order of two spellings of one name (`a=1&%61=2`).
 */
function cloudFrontQuery(request) {
  var raw = typeof request.rawQueryString === 'function' ? request.rawQueryString() : undefined;
  return {
    getAll: function (name) {
      return raw === undefined ? parsedQueryValues(request.querystring, name) : rawQueryValues(raw, name);
    },
  };
}

/** As the application/x-www-form-urlencoded parser does: `&`-separated, the first `=` splits, `+` is a space. */
function rawQueryValues(raw, name) {
  var values = [];
  var parts = raw.split('&');
  for (var i = 0; i < parts.length; i++) {
    var part = parts[i];
    if (part === '') continue;
    var eq = part.indexOf('=');
    if (decodeQueryPart(eq === -1 ? part : part.slice(0, eq)) === name) values.push(eq === -1 ? '' : decodeQueryPart(part.slice(eq + 1)));
  }
  return values;
}

function parsedQueryValues(querystring, name) {
  var values = [];
  for (var key in querystring) {
    if (decodeQueryPart(key) !== name) continue;
    var entry = querystring[key];
    var all = entry.multiValue || [entry];
    for (var i = 0; i < all.length; i++) values.push(decodeQueryPart(all[i].value));
  }
  return values;
}

/** `+` is a space in a query; an escape that does not decode is kept as sent (URLSearchParams is as lenient). */
function decodeQueryPart(raw) {
  var text = raw.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(text);
  } catch (e) {
    return text;
  }
}

/** An error document rendered at answer time, with the contract headers. */
function errorResponse(request, code, extra) {
  return generated(request, ROUTES.errors[code].status, merged(ROUTES.headers, extra), errorAnswerBody(code, new Date().toISOString()));
}

/** A response the function makes itself: lower-case header names, no body for HEAD. */
function generated(request, status, headers, body) {
  var response = { statusCode: status, statusDescription: STATUS_TEXT[status] || '', headers: {} };
  for (var name in headers) response.headers[name.toLowerCase()] = { value: headers[name] };
  if (body !== '' && request.method !== 'HEAD') response.body = { encoding: 'text', data: body };
  return response;
}

function merged(a, b) {
  var all = {};
  var name;
  for (name in a) all[name] = a[name];
  for (name in b) all[name] = b[name];
  return all;
}
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
