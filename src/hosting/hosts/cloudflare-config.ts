/**
 * Renders the Cloudflare side of the route table: `cloudflare/worker.js`, an ES module Worker that
 * answers the API from an R2 bucket filled by `publish` (dependency-free, no build step: the routing
 * module of ./routing-source.ts, then the handler of ./worker-handler.js, both as written), and
 * `cloudflare/wrangler.toml`, which binds it to the bucket and routes only the API's paths to it.
 * Both are committed; `profile-snapshot cloudflare config --check` fails when they differ from what
 * this module renders.
 */
import { generatedBanner, syncGeneratedFiles } from './generated.js';
import { ROUTES, type RouteTable } from '../routes/routes.js';
import { hostCode, routingSource } from './routing-source.js';

export const WORKER_MODULE = 'cloudflare/worker.js';
export const WRANGLER_TOML = 'cloudflare/wrangler.toml';
/** The R2 binding's name: the Worker reads `env.PROFILES`. */
export const BUCKET_BINDING = 'PROFILES';
/** A date the pinned workerd (miniflare) supports; the Worker uses nothing newer. */
export const COMPATIBILITY_DATE = '2026-04-01';

/** What differs between deployments; the committed files use the defaults. */
export interface CloudflareOptions {
  /** Worker name. */
  name: string;
  /** The API's host name: the Worker is routed `<host>/api/v1/*` and `<host>/service-api/v1/*`. */
  host: string;
  /** The zone (domain) the host belongs to. */
  zone: string;
  /** The R2 bucket `publish` writes to. */
  bucket: string;
  /** The key prefix given to `publish --to s3://<bucket>/<prefix>`; empty for none. */
  prefix: string;
}

export const CLOUDFLARE_DEFAULTS: CloudflareOptions = {
  name: 'profile-api',
  host: 'profiles.example.com',
  zone: 'example.com',
  bucket: 'profiles',
  prefix: '',
};

const GENERATED = generatedBanner('cloudflare config');

export function renderWorkerModule(table: RouteTable = ROUTES): string {
  return [
    `// ${GENERATED.join('\n// ')}`,
    '//',
    '// The public profile API from an R2 bucket filled by `profile-snapshot publish` (see docs/hosting.md).',
    '// Bindings (wrangler.toml): PROFILES, the R2 bucket; PREFIX, the key prefix (no leading slash, empty',
    '// for none); CACHE = "off" to read R2 on every request; OUTSIDE = "origin" to pass paths that are not',
    "// the API's to the zone's origin instead of answering a plain 404.",
    '',
    ...routingSource({ exported: false, answers: true }, table),
    hostCode('worker-handler.js', 'worker'),
    '',
    'export default {',
    '  fetch(request, env, ctx) {',
    '    return handleRequest(request, env, ctx);',
    '  },',
    '};',
    '',
  ].join('\n');
}

const str = (value: string) => JSON.stringify(value);

/** Route patterns: each API prefix itself and everything under it, on the API's host only. */
export function workerRoutes(host: string, table: RouteTable = ROUTES): string[] {
  return table.prefixes.flatMap((prefix) => [`${host}${prefix}`, `${host}${prefix}/*`]);
}

export function renderWranglerToml(options: CloudflareOptions = CLOUDFLARE_DEFAULTS, table: RouteTable = ROUTES): string {
  const lines = [
    ...GENERATED.map((l) => `# ${l}`),
    '# Deploy: npx wrangler deploy --config cloudflare/wrangler.toml (see "Cloudflare: R2 + a Worker" in docs/hosting.md).',
    '',
    `name = ${str(options.name)}`,
    `main = ${str('worker.js')}`,
    `compatibility_date = ${str(COMPATIBILITY_DATE)}`,
    '# Only through the routes below: no workers.dev address that would bypass them.',
    'workers_dev = false',
    '',
    "# The API's paths and nothing else: other services of the platform own the rest of the host.",
    'routes = [',
    ...workerRoutes(options.host, table).map((pattern) => `  { pattern = ${str(pattern)}, zone_name = ${str(options.zone)} },`),
    ']',
    '',
    '# The bucket `profile-snapshot publish --to s3://<bucket>/<prefix>` writes to, read-only here.',
    '[[r2_buckets]]',
    `binding = ${str(BUCKET_BINDING)}`,
    `bucket_name = ${str(options.bucket)}`,
    '',
    '[vars]',
    '# The key prefix of `publish --to`, without a leading slash; "" for none.',
    `PREFIX = ${str(options.prefix)}`,
    '# "on": each data centre keeps a document for the contract\'s s-maxage (30 s) instead of reading R2',
    '# on every request; "off": read R2 every time.',
    'CACHE = "on"',
    '# "404": a path that is not the API\'s gets a plain 404; "origin": it goes on to the zone\'s origin.',
    'OUTSIDE = "404"',
  ];
  return `${lines.join('\n')}\n`;
}

export function renderCloudflareFiles(options: CloudflareOptions = CLOUDFLARE_DEFAULTS, table: RouteTable = ROUTES): Map<string, string> {
  return new Map([
    [WORKER_MODULE, renderWorkerModule(table)],
    [WRANGLER_TOML, renderWranglerToml(options, table)],
  ]);
}

/** Writes the rendered files under `root` (or, with `check`, only compares); returns those that differed. */
export function syncCloudflareFiles(root: string, options: { check: boolean } & Partial<CloudflareOptions>): string[] {
  const d = CLOUDFLARE_DEFAULTS;
  const chosen = {
    name: options.name ?? d.name,
    host: options.host ?? d.host,
    zone: options.zone ?? d.zone,
    bucket: options.bucket ?? d.bucket,
    prefix: options.prefix ?? d.prefix,
  };
  return syncGeneratedFiles(root, renderCloudflareFiles(chosen), options);
}
