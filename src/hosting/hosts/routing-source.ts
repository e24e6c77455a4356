/**
 * The route table as plain JavaScript for hosts that run code (the Netlify edge function, the
 * Cloudflare Worker, the CloudFront Function): the table's data and the very resolver the origin
 * server runs (../routes/routing.js), embedded as written, so every host routes by the same code.
 * Dependency-free; loadable by Deno, workerd and Node.
 */
import { readFileSync } from 'node:fs';
import {
  ALLOW_HEADER,
  CANONICAL_USERNAME,
  EDGE_CACHE_CONTROL,
  ERROR_BODIES,
  OUTSIDE_BODY,
  OUTSIDE_HEADERS,
  PREFLIGHT_HEADERS,
  ROUTES,
  VARY_HEADER,
  type RouteTable,
} from '../routes/routes.js';

/**
 * A region of one of hosting's plain JavaScript files (a path from this folder), between `// ---- host code: <region> ----`
 * and `// ---- end of host code ----`, exactly as written (the compile step copies these files to
 * build/ unchanged, so the generated files do not depend on the compiler).
 */
export function hostCode(file: string, region: string): string {
  const text = readFileSync(new URL(`./${file}`, import.meta.url), 'utf8');
  const begin = `// ---- host code: ${region} ----\n`;
  const start = text.indexOf(begin);
  const end = text.indexOf('// ---- end of host code ----', start);
  if (start === -1 || end === -1) throw new Error(`bug: ${file} has no host code region ${region}`);
  return text.slice(start + begin.length, end).trimEnd();
}

/** `const NAME = <JSON>;`, exported or not (`var` for ES 5.1 hosts). */
export function constant(
  name: string,
  value: unknown,
  options: { exported: boolean; pretty?: boolean; keyword?: 'const' | 'var' },
): string {
  const json = options.pretty ? JSON.stringify(value, null, 2) : JSON.stringify(value);
  return `${options.exported ? 'export ' : ''}${options.keyword ?? 'const'} ${name} = ${json};`;
}

export interface RoutingOptions {
  /** Export the names the edge function imports (a module of its own) or keep them local (one file). */
  exported: boolean;
  /** Add what a host answering errors and foreign paths by itself needs (the Worker). */
  answers?: boolean;
}

/** The routing module's lines: the table, the resolver and its helpers. */
export function routingSource(options: RoutingOptions, table: RouteTable = ROUTES): string[] {
  const lines = [
    constant('ROUTES', table, { exported: options.exported, pretty: true }),
    constant('PREFLIGHT_HEADERS', PREFLIGHT_HEADERS, options),
    constant('ALLOW_HEADER', ALLOW_HEADER, options),
  ];
  if (options.answers) {
    lines.push(
      constant('OUTSIDE_HEADERS', OUTSIDE_HEADERS, options),
      constant('OUTSIDE_BODY', OUTSIDE_BODY, options),
      constant('EDGE_CACHE_CONTROL', EDGE_CACHE_CONTROL, options),
      constant('VARY_HEADER', VARY_HEADER, options),
      constant('ERROR_BODIES', ERROR_BODIES, options),
      hostCode('../routes/routing.js', 'answers'),
      hostCode('../routes/routing.js', 'conditional'),
    );
  }
  lines.push(`const CANONICAL_USERNAME = ${CANONICAL_USERNAME.toString()};`, hostCode('../routes/routing.js', 'routing'));
  // The edge function fetches error documents from the site by path; the Worker reads them by key.
  if (options.exported)
    lines.push('export function errorPath(code, table = ROUTES) { return `/${table.errors[code].file}`; }', 'export { resolveRoute };');
  return lines;
}
