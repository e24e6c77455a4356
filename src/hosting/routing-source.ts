/**
 * The route table as plain JavaScript for hosts that run code (the Netlify edge function, the
 * Cloudflare Worker): the table's data and the very resolver the origin server runs (its compiled
 * source), so every host routes by the same code. Dependency-free; loadable by Deno, workerd and Node.
 */
import { ALLOW_HEADER, CANONICAL_USERNAME, EDGE_CACHE_CONTROL, ERROR_BODIES, OUTSIDE_BODY, OUTSIDE_HEADERS, PREFLIGHT_HEADERS, ROUTES, errorAnswerBody, profile, resolveRoute, under, type RouteTable } from './routes.js';

/** A module-level function's compiled source (the build targets ES2022: the code as written, minus types). */
export const source = (fn: (...args: never[]) => unknown): string => fn.toString();

/** `const NAME = <JSON>;`, exported or not (`var` for ES 5.1 hosts). */
export function constant(name: string, value: unknown, options: { exported: boolean; pretty?: boolean; keyword?: 'const' | 'var' }): string {
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
  const exported = options.exported ? 'export ' : '';
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
      constant('ERROR_BODIES', ERROR_BODIES, options),
      source(errorAnswerBody),
    );
  }
  lines.push(
    `const CANONICAL_USERNAME = ${CANONICAL_USERNAME.toString()};`,
    source(under),
    source(profile),
  );
  // The edge function fetches error documents from the site by path; the Worker reads them by key.
  if (options.exported) lines.push('export function errorPath(code, table = ROUTES) { return `/${table.errors[code].file}`; }');
  lines.push(`${exported}${source(resolveRoute)}`);
  return lines;
}
