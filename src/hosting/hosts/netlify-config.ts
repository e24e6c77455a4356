/**
 * Renders the Netlify side of the route table: `netlify.toml` (build settings, rewrite rules, header
 * rules, edge function declarations) and the routing module the edge function imports. Both files
 * are committed; `profile-snapshot netlify config --check` (run by the tests) fails when they differ
 * from what this module renders, so nobody can hand-edit them out of sync with the table.
 *
 * Netlify facts this relies on (checked against netlify-redirector, Netlify's production rule engine,
 * in test/hosting; see "How the hosting is tested" in docs/hosting.md for the sources):
 *   - a non-forced rule never shadows an existing file, so `<users>/*` -> USER_NOT_FOUND only
 *     answers names without a file;
 *   - `query = {username = ""}` matches only an empty (or bare) parameter, `":username"` is skipped
 *     when the parameter is absent; rules apply in order, the first match wins;
 *   - custom headers do not apply to edge function answers (the function sets them itself), and it
 *     is undocumented whether header rules match the requested or the rewritten path, so every
 *     public prefix and every rewrite target gets the same headers.
 */
import { ERRORS, type ErrorCode } from '../../render/documents.js';
import { generatedBanner, syncGeneratedFiles } from './generated.js';
import { ROUTES, errorPath, type RouteTable } from '../routes/routes.js';
import { routingSource } from './routing-source.js';
import { DEFAULT_OUT_DIR } from '../../core/layout.js';

export const NETLIFY_TOML = 'netlify.toml';
/** The edge function's name is its folder under netlify/edge-functions/. */
export const EDGE_FUNCTION = 'profile-api';
export const EDGE_ROUTES_MODULE = `netlify/edge-functions/${EDGE_FUNCTION}/routes.js`;
export const PUBLISH_DIR = DEFAULT_OUT_DIR;
/**
 * Builds the site, then gates the deploy on `profile-snapshot verify --netlify` (package.json's
 * build:netlify): a snapshot with any defect, a folder over Netlify's limit (see ./netlify-limits.ts) or a
 * netlify.toml out of step with the route table fails the build, so Netlify keeps the last deploy.
 */
export const BUILD_COMMAND = 'npm run build:netlify';

const GENERATED = generatedBanner('netlify config');

/** A TOML basic string. JSON string escapes are valid TOML escapes for the characters we emit. */
const str = (value: string) => JSON.stringify(value);

/** Letters that make a username segment need the edge function: any upper-case ASCII letter. */
const NOT_LOWER_CASE = '[^/]*[A-Z][^/]*';
/** Regex-safe form of a literal path. */
const literal = (path: string) => path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Where the edge function runs: user paths whose username has an upper-case letter, and the
 * query-string form (whose query a path pattern cannot see). Plain lower-case profile requests never
 * match, so they stay purely static.
 */
function edgeFunctionPatterns(table: RouteTable = ROUTES): string[] {
  const aliases = table.profiles.map((p) => literal(p.path)).join('|');
  return [`^(${aliases})/${NOT_LOWER_CASE}$`, `^${literal(table.query.path)}/?$`];
}

function rule(lines: string[], fields: { from: string; query?: string; to: string; status: number }): void {
  lines.push('[[redirects]]');
  lines.push(`  from = ${str(fields.from)}`);
  if (fields.query !== undefined) lines.push(`  query = { ${fields.query} }`);
  lines.push(`  to = ${str(fields.to)}`);
  lines.push(`  status = ${fields.status}`);
  lines.push('  force = false', '');
}

export function renderNetlifyToml(table: RouteTable = ROUTES): string {
  const err = (code: ErrorCode) => ({ to: errorPath(code, table), status: table.errors[code].status });
  const lines: string[] = [];
  lines.push(...GENERATED.map((l) => `# ${l}`), '');
  lines.push('# The build fails, and Netlify keeps the previous deploy, unless `profile-snapshot verify --netlify`');
  lines.push('# passes on the snapshot (package.json: build:netlify; see "Gate deploys with verify" in docs/verify.md).');
  lines.push('[build]');
  lines.push(`  command = ${str(BUILD_COMMAND)}`);
  lines.push(`  publish = ${str(PUBLISH_DIR)}`, '');

  lines.push('# Code for what rules cannot do: usernames that are not lower case (rules are case-sensitive and');
  lines.push("# cannot lower-case), and the query-string form (a rewrite's target is not run through the rules again,");
  lines.push('# so only code can answer its misses). Lower-case profile paths never run it: they stay static.');
  for (const pattern of edgeFunctionPatterns(table)) {
    lines.push('[[edge_functions]]');
    lines.push(`  function = ${str(EDGE_FUNCTION)}`);
    lines.push(`  pattern = ${str(pattern)}`, '');
  }

  lines.push('# Rules apply in order, first match wins; none is forced, so an existing file always wins.');
  const q = table.query;
  lines.push(`# ${q.path}: an empty or bare ${q.param} is ${ERRORS.USERNAME_REQUIRED.code}; a value rewrites to the canonical file.`);
  rule(lines, { from: q.path, query: `${q.param} = ""`, ...err('USERNAME_REQUIRED') });
  rule(lines, { from: q.path, query: `${q.param} = ":${q.param}"`, to: `/${q.dir}/:${q.param}`, status: 200 });
  rule(lines, { from: q.path, ...err('USERNAME_REQUIRED') });
  lines.push(`# Any name without a file under a users folder (unknown, inactive, deleted): ${ERRORS.USER_NOT_FOUND.code}.`);
  for (const alias of table.profiles) rule(lines, { from: `${alias.path}/*`, ...err('USER_NOT_FOUND') });
  lines.push(`# Anything else under the API prefixes: ${ERRORS.NOT_FOUND.code}. Never /api/* as a whole: other services`);
  lines.push('# of the platform answer /api/avatar and /api/decoration on the same host.');
  for (const prefix of table.prefixes) rule(lines, { from: `${prefix}/*`, ...err('NOT_FOUND') });

  lines.push('# The contract headers on every public prefix and every rewrite target.');
  const targets = [...table.prefixes, `/${table.errors.NOT_FOUND.file.slice(0, table.errors.NOT_FOUND.file.lastIndexOf('/'))}`];
  for (const prefix of targets) {
    lines.push('[[headers]]');
    lines.push(`  for = ${str(`${prefix}/*`)}`);
    lines.push('  [headers.values]');
    for (const [name, value] of Object.entries(table.headers)) lines.push(`    ${name} = ${str(value)}`);
    lines.push('');
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

/** The edge function's routing module (see ./routing-source.ts). */
function renderEdgeRoutesModule(table: RouteTable = ROUTES): string {
  return [`// ${GENERATED.join('\n// ')}`, '// @ts-nocheck', '', ...routingSource({ exported: true }, table), ''].join('\n');
}

/** Every committed file the table renders, by path relative to the repository root. */
export function renderNetlifyFiles(table: RouteTable = ROUTES): Map<string, string> {
  return new Map([
    [NETLIFY_TOML, renderNetlifyToml(table)],
    [EDGE_ROUTES_MODULE, renderEdgeRoutesModule(table)],
  ]);
}

/** Writes the rendered files under `root` (or, with `check`, only compares); returns those that differed. */
export function syncNetlifyFiles(root: string, options: { check: boolean }): string[] {
  return syncGeneratedFiles(root, renderNetlifyFiles(), options);
}
