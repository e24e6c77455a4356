// GENERATED from the route table (src/hosting/routes.ts) by `profile-snapshot netlify config`. Do not edit:
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
      "file": "service-api/v1/creators"
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
function under(path, prefix) {
    return path === prefix || path.startsWith(`${prefix}/`);
}
function profile(dir, requested) {
    const username = requested.toLowerCase();
    if (!CANONICAL_USERNAME.test(username))
        return { kind: 'error', code: 'USER_NOT_FOUND' };
    return { kind: 'profile', file: `${dir}/${username}`, username };
}
export function errorPath(code, table = ROUTES) { return `/${table.errors[code].file}`; }
export function resolveRoute(path, query, table = ROUTES) {
    for (const f of table.files)
        if (path === f.path)
            return { kind: 'file', file: f.file };
    // The error documents are plain static files of the site on Netlify (rewrite targets); the same here.
    for (const e of Object.values(table.errors))
        if (path === `/${e.file}`)
            return { kind: 'file', file: e.file };
    // The query form: Netlify treats `/api/v1/users/` as `/api/v1/users`.
    if (path === table.query.path || path === `${table.query.path}/`) {
        const values = query.getAll(table.query.param);
        const value = values[values.length - 1];
        if (value === undefined || value === '')
            return { kind: 'error', code: 'USERNAME_REQUIRED' };
        return profile(table.query.dir, value);
    }
    for (const alias of table.profiles) {
        if (!under(path, alias.path))
            continue;
        const rest = path.slice(alias.path.length + 1);
        if (rest === '' || rest.includes('/'))
            return { kind: 'error', code: 'USER_NOT_FOUND' };
        return profile(alias.dir, rest);
    }
    for (const prefix of table.prefixes)
        if (under(path, prefix))
            return { kind: 'error', code: 'NOT_FOUND' };
    return { kind: 'outside' };
}
