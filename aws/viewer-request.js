// GENERATED from the route table (src/hosting/routes.ts) by `profile-snapshot aws config`. Do not edit:
// a test fails when this file differs from what the table renders; regenerate it instead.
//
// CloudFront Function, viewer request, runtime cloudfront-js-2.0 (see docs/hosting.md). ES 5.1 only.

var ROUTES = {"prefixes":["/api/v1","/service-api/v1"],"profiles":[{"path":"/api/v1/users","dir":"api/v1/users"},{"path":"/service-api/v1/users","dir":"service-api/v1/users"}],"query":{"path":"/api/v1/users","param":"username","dir":"api/v1/users"},"files":[{"path":"/service-api/v1/creators","file":"service-api/v1/creators"},{"path":"/api/v1/openapi.json","file":"api/v1/openapi.json"}],"errors":{"USER_NOT_FOUND":{"status":404,"file":"_errors/user-not-found.json"},"USERNAME_REQUIRED":{"status":400,"file":"_errors/username-required.json"},"NOT_FOUND":{"status":404,"file":"_errors/not-found.json"},"METHOD_NOT_ALLOWED":{"status":405,"file":"_errors/method-not-allowed.json"}},"headers":{"Content-Type":"application/json; charset=utf-8","Access-Control-Allow-Origin":"*","Access-Control-Allow-Methods":"GET, OPTIONS","Cache-Control":"public, s-maxage=30, stale-while-revalidate=60","X-Content-Type-Options":"nosniff"}};
var PREFLIGHT_HEADERS = {"Access-Control-Allow-Headers":"*","Access-Control-Max-Age":"86400"};
var ALLOW_HEADER = "GET, HEAD, OPTIONS";
var OUTSIDE_HEADERS = {"Content-Type":"text/plain; charset=utf-8","X-Content-Type-Options":"nosniff","Cache-Control":"public, s-maxage=30, stale-while-revalidate=60"};
var OUTSIDE_BODY = "Not Found\n";
var ERROR_BODIES = {"USER_NOT_FOUND":"{\"status\":404,\"code\":\"USER_NOT_FOUND\",\"message\":\"No active or suspended profile has this username.\"}","USERNAME_REQUIRED":"{\"status\":400,\"code\":\"USERNAME_REQUIRED\",\"message\":\"The username query parameter is required and must not be empty.\"}","NOT_FOUND":"{\"status\":404,\"code\":\"NOT_FOUND\",\"message\":\"No API resource exists at this path.\"}","METHOD_NOT_ALLOWED":"{\"status\":405,\"code\":\"METHOD_NOT_ALLOWED\",\"message\":\"Only GET and OPTIONS are allowed.\"}"};
var STATUS_TEXT = {"204":"No Content","400":"Bad Request","404":"Not Found","405":"Method Not Allowed"};
var CANONICAL_USERNAME = /^[a-z0-9_-][a-z0-9._-]{0,63}$/;
function handler(event) {
    var request = event.request;
    var route = routeOfRequest(request);
    if (route.kind === 'outside')
        return generated(request, 404, OUTSIDE_HEADERS, OUTSIDE_BODY);
    if (request.method === 'OPTIONS')
        return generated(request, 204, merged(ROUTES.headers, PREFLIGHT_HEADERS), '');
    if (request.method !== 'GET' && request.method !== 'HEAD')
        return errorResponse(request, 'METHOD_NOT_ALLOWED', { Allow: ALLOW_HEADER });
    if (route.kind === 'error')
        return errorResponse(request, route.code, {});
    // The one object the table names; no query (one cache entry per object) and no Range (a JSON
    // document is always sent whole).
    request.uri = '/' + route.file;
    request.querystring = {};
    delete request.headers['range'];
    return request;
}
function routeOfRequest(request) {
    var path;
    try {
        path = decodeURIComponent(request.uri);
    }
    catch (e) {
        return { kind: 'error', code: 'NOT_FOUND' };
    }
    return resolveRoute(path, cloudFrontQuery(request));
}
function cloudFrontQuery(request) {
    var raw = typeof request.rawQueryString === 'function' ? request.rawQueryString() : undefined;
    return {
        getAll: function (name) {
            return raw === undefined ? parsedQueryValues(request.querystring, name) : rawQueryValues(raw, name);
        },
    };
}
function rawQueryValues(raw, name) {
    var values = [];
    var parts = raw.split('&');
    for (var i = 0; i < parts.length; i++) {
        var part = parts[i];
        if (part === '')
            continue;
        var eq = part.indexOf('=');
        if (decodeQueryPart(eq === -1 ? part : part.slice(0, eq)) === name)
            values.push(eq === -1 ? '' : decodeQueryPart(part.slice(eq + 1)));
    }
    return values;
}
function parsedQueryValues(querystring, name) {
    var values = [];
    for (var key in querystring) {
        if (decodeQueryPart(key) !== name)
            continue;
        var entry = querystring[key];
        var all = entry.multiValue || [entry];
        for (var i = 0; i < all.length; i++)
            values.push(decodeQueryPart(all[i].value));
    }
    return values;
}
function decodeQueryPart(raw) {
    var text = raw.replace(/\+/g, ' ');
    try {
        return decodeURIComponent(text);
    }
    catch (e) {
        return text;
    }
}
function errorResponse(request, code, extra) {
    return generated(request, ROUTES.errors[code].status, merged(ROUTES.headers, extra), errorAnswerBody(code, new Date().toISOString()));
}
function generated(request, status, headers, body) {
    var response = { statusCode: status, statusDescription: STATUS_TEXT[status] || '', headers: {} };
    for (var name in headers)
        response.headers[name.toLowerCase()] = { value: headers[name] };
    if (body !== '' && request.method !== 'HEAD')
        response.body = { encoding: 'text', data: body };
    return response;
}
function merged(a, b) {
    var all = {};
    var name;
    for (name in a)
        all[name] = a[name];
    for (name in b)
        all[name] = b[name];
    return all;
}
function errorAnswerBody(code, isoTimestamp) {
    return '{"success":false,"error":' + ERROR_BODIES[code] + ',"meta":{"timestamp":"' + isoTimestamp + '","version":"v1","executionTimeMs":0}}';
}
function under(path, prefix) {
    return path === prefix || path.indexOf(prefix + '/') === 0;
}
function profile(dir, requested) {
    var username = requested.toLowerCase();
    if (!CANONICAL_USERNAME.test(username))
        return { kind: 'error', code: 'USER_NOT_FOUND' };
    return { kind: 'profile', file: dir + '/' + username, username: username };
}
function resolveRoute(path, query, table) {
    var routes = table || ROUTES;
    var i;
    for (i = 0; i < routes.files.length; i++)
        if (path === routes.files[i].path)
            return { kind: 'file', file: routes.files[i].file };
    // The error documents are plain static files of the site on Netlify (rewrite targets); the same here.
    for (var code in routes.errors)
        if (path === '/' + routes.errors[code].file)
            return { kind: 'file', file: routes.errors[code].file };
    // The query form: Netlify treats `/api/v1/users/` as `/api/v1/users`.
    if (path === routes.query.path || path === routes.query.path + '/') {
        var values = query.getAll(routes.query.param);
        var value = values[values.length - 1];
        if (value === undefined || value === '')
            return { kind: 'error', code: 'USERNAME_REQUIRED' };
        return profile(routes.query.dir, value);
    }
    for (i = 0; i < routes.profiles.length; i++) {
        var alias = routes.profiles[i];
        if (!under(path, alias.path))
            continue;
        var rest = path.slice(alias.path.length + 1);
        if (rest === '' || rest.indexOf('/') !== -1)
            return { kind: 'error', code: 'USER_NOT_FOUND' };
        return profile(alias.dir, rest);
    }
    for (i = 0; i < routes.prefixes.length; i++)
        if (under(path, routes.prefixes[i]))
            return { kind: 'error', code: 'NOT_FOUND' };
    return { kind: 'outside' };
}
