/**
 * The CloudFront Function (viewer request, runtime cloudfront-js-2.0) in front of the S3 bucket that
 * `publish` fills. Not run from here: `aws config` embeds the code between the markers into
 * aws/viewer-request.js, as it is written here, after the table's data and the shared resolver of
 * ./routing.js, so it may use only the names that file defines (imported below for reading) and what
 * the runtime offers: ES 5.1 plus a few later features, no URL, no URLSearchParams, no network (so no
 * bucket reads: a missing profile is the bucket's 403/404, turned into USER_NOT_FOUND by the
 * distribution's custom error responses). Hence ES 5.1 throughout, which a test checks by parsing the
 * emitted file. The shapes of CloudFront's event and response are in ./cloudfront-function.ts.
 *
 * The function answers everything that needs no object itself (preflights, 405, 400, NOT_FOUND, a
 * name that can never be published, paths that are not the API's) and rewrites the rest to the one
 * object the route table names. Nothing else ever reaches the bucket, so no spelling of a path can
 * fetch `.profile-snapshot/` or any other key.
 */
import { STATUS_TEXT } from './cloudfront-function.js';
import { ALLOW_HEADER, OUTSIDE_BODY, OUTSIDE_HEADERS, PREFLIGHT_HEADERS, ROUTES } from '../routes/routes.js';
import { acceptsGzip, errorAnswerBody, resolveRoute } from '../routes/routing.js';

// ---- host code: cloudfront ----
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
// ---- end of host code ----

export { cloudFrontQuery, handler };
