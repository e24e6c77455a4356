/**
 * The CloudFront Function (viewer request, runtime cloudfront-js-2.0) in front of the S3 bucket that
 * `publish` fills. Not run from here: `aws config` emits these functions by their source into
 * aws/viewer-request.js, after the table's data and the shared resolver of ./routes.ts, so each may
 * use only the names that file defines and what the runtime offers: ES 5.1 plus a few later
 * features, no URL, no URLSearchParams, no network (so no bucket reads: a missing profile is the
 * bucket's 403/404, turned into USER_NOT_FOUND by the distribution's custom error responses). Hence
 * ES 5.1 throughout, which a test checks by parsing the emitted file.
 *
 * The function answers everything that needs no object itself (preflights, 405, 400, NOT_FOUND, a
 * name that can never be published, paths that are not the API's) and rewrites the rest to the one
 * object the route table names. Nothing else ever reaches the bucket, so no spelling of a path can
 * fetch `.profile-snapshot/` or any other key.
 */
import type { ErrorCode } from '../render/documents.js';
import { ALLOW_HEADER, OUTSIDE_BODY, OUTSIDE_HEADERS, PREFLIGHT_HEADERS, ROUTES, errorAnswerBody, resolveRoute, type QueryValues, type Resolution } from './routes.js';

/** A query parameter or header as CloudFront passes it: the first value, and every value when repeated. */
export interface CloudFrontValue {
  value: string;
  multiValue?: { value: string }[];
}

/** The viewer request. `uri` and the query string's names and values arrive as the viewer sent them, still percent-encoded. */
export interface CloudFrontRequest {
  method: string;
  uri: string;
  querystring: Record<string, CloudFrontValue>;
  headers: Record<string, CloudFrontValue>;
  /** The query string as sent, without `?` (undefined with none); a helper method of cloudfront-js-2.0. */
  rawQueryString?: () => string | undefined;
}

export interface CloudFrontResponse {
  statusCode: number;
  statusDescription: string;
  headers: Record<string, { value: string }>;
  body?: { encoding: 'text'; data: string };
}

export interface CloudFrontEvent {
  request: CloudFrontRequest;
}

/** Reason phrases of the statuses the function answers with. */
export const STATUS_TEXT: Record<number, string> = { 204: 'No Content', 400: 'Bad Request', 404: 'Not Found', 405: 'Method Not Allowed' };

/** The function CloudFront calls (the name is CloudFront's convention). */
export function handler(event: CloudFrontEvent): CloudFrontRequest | CloudFrontResponse {
  var request = event.request;
  var route = routeOfRequest(request);
  if (route.kind === 'outside') return generated(request, 404, OUTSIDE_HEADERS, OUTSIDE_BODY);
  if (request.method === 'OPTIONS') return generated(request, 204, merged(ROUTES.headers, PREFLIGHT_HEADERS), '');
  if (request.method !== 'GET' && request.method !== 'HEAD') return errorResponse(request, 'METHOD_NOT_ALLOWED', { Allow: ALLOW_HEADER });
  if (route.kind === 'error') return errorResponse(request, route.code, {});
  // The one object the table names; no query (one cache entry per object) and no Range (a JSON
  // document is always sent whole).
  request.uri = '/' + route.file;
  request.querystring = {};
  delete request.headers['range'];
  return request;
}

/** The path decoded once, as on every other host; a malformed escape is no route. */
export function routeOfRequest(request: CloudFrontRequest): Resolution {
  var path;
  try {
    path = decodeURIComponent(request.uri);
  } catch (e) {
    return { kind: 'error', code: 'NOT_FOUND' };
  }
  return resolveRoute(path, cloudFrontQuery(request));
}

/**
 * The query as URLSearchParams reads it. From the raw query string when the runtime offers it
 * (`rawQueryString()`, cloudfront-js-2.0): exactly, whatever the spelling. Otherwise from the parsed
 * object, whose names and values are still encoded: exact too, except that the order between two
 * spellings of one name (`username=a&user%6Eame=b`) is lost there.
 */
export function cloudFrontQuery(request: CloudFrontRequest): QueryValues {
  var raw = typeof request.rawQueryString === 'function' ? request.rawQueryString() : undefined;
  return {
    getAll: function (name: string): string[] {
      return raw === undefined ? parsedQueryValues(request.querystring, name) : rawQueryValues(raw, name);
    },
  };
}

/** As the application/x-www-form-urlencoded parser does: `&`-separated, the first `=` splits, `+` is a space. */
export function rawQueryValues(raw: string, name: string): string[] {
  var values: string[] = [];
  var parts = raw.split('&');
  for (var i = 0; i < parts.length; i++) {
    var part = parts[i]!;
    if (part === '') continue;
    var eq = part.indexOf('=');
    if (decodeQueryPart(eq === -1 ? part : part.slice(0, eq)) === name) values.push(eq === -1 ? '' : decodeQueryPart(part.slice(eq + 1)));
  }
  return values;
}

export function parsedQueryValues(querystring: Record<string, CloudFrontValue>, name: string): string[] {
  var values: string[] = [];
  for (var key in querystring) {
    if (decodeQueryPart(key) !== name) continue;
    var entry = querystring[key]!;
    var all = entry.multiValue || [entry];
    for (var i = 0; i < all.length; i++) values.push(decodeQueryPart(all[i]!.value));
  }
  return values;
}

/** `+` is a space in a query; an escape that does not decode is kept as sent (URLSearchParams is as lenient). */
export function decodeQueryPart(raw: string): string {
  var text = raw.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(text);
  } catch (e) {
    return text;
  }
}

/** An error document rendered at answer time, with the contract headers. */
export function errorResponse(request: CloudFrontRequest, code: ErrorCode, extra: Record<string, string>): CloudFrontResponse {
  return generated(request, ROUTES.errors[code].status, merged(ROUTES.headers, extra), errorAnswerBody(code, new Date().toISOString()));
}

/** A response the function makes itself: lower-case header names, no body for HEAD. */
export function generated(request: CloudFrontRequest, status: number, headers: Record<string, string>, body: string): CloudFrontResponse {
  var response: CloudFrontResponse = { statusCode: status, statusDescription: STATUS_TEXT[status] || '', headers: {} };
  for (var name in headers) response.headers[name.toLowerCase()] = { value: headers[name]! };
  if (body !== '' && request.method !== 'HEAD') response.body = { encoding: 'text', data: body };
  return response;
}

export function merged(a: Record<string, string>, b: Record<string, string>): Record<string, string> {
  var all: Record<string, string> = {};
  var name;
  for (name in a) all[name] = a[name]!;
  for (name in b) all[name] = b[name]!;
  return all;
}
