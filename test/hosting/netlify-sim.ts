/**
 * Netlify, as far as the tests can have it for real: the committed netlify.toml read by Netlify's own
 * parsers (@netlify/redirect-parser, @netlify/headers-parser) and matched by Netlify's production rule
 * engine (netlify-redirector, WebAssembly). What the engine does not do is emulated here, as Netlify
 * documents it, and served over real HTTP on 127.0.0.1:
 *
 *   1. Edge functions declared for a path run before redirects (docs: "Edge functions declared for a
 *      path run before redirects declared for that path"); `context.next()` continues with the rest.
 *      Their answer is sent as it is: custom headers do not apply to it.
 *   2. A rule that is not forced never shadows an existing file ("Shadowing" in the rewrite docs).
 *   3. A rewrite (200 or 4xx) serves its target file with the rule's status; the target is not run
 *      through the rules again: a missing target is Netlify's plain 404 page.
 *   4. Header rules add their values to static answers. Which path they are matched against after a
 *      rewrite is undocumented, so `headerPath` picks the requested or the rewritten one and the tests
 *      run both.
 *   5. Dot files and folders are not deployed (the tool's bookkeeping lives in one).
 */
import TOML from '@iarna/toml';
import { parseAllHeaders } from '@netlify/headers-parser';
import { parseAllRedirects } from '@netlify/redirect-parser';
import { createRequire } from 'node:module';
import { lstatSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const redirector = require('netlify-redirector') as {
  parseJSON: (rules: string, options: object) => Promise<{ match: (req: object) => Match | null }>;
};

interface Match {
  to: string;
  status: number;
  force: boolean;
  force404?: boolean;
}
type EdgeFunction = (request: Request, context: { next: () => Promise<Response> }) => Promise<Response | undefined>;

export interface NetlifySimOptions {
  site: string;
  tomlPath: string;
  edgeFunctions: Record<string, EdgeFunction>;
  headerPath: 'requested' | 'rewritten';
}

export interface NetlifySim {
  origin: string;
  /** Which edge function, if any, a path would run (for the tests of the declarations). */
  edgeFunctionFor: (path: string) => string | undefined;
  close: () => Promise<void>;
}

const NETLIFY_404 = 'Not Found - Request ID: simulated\n';

export async function startNetlifySim(options: NetlifySimOptions): Promise<NetlifySim> {
  const { redirects, errors } = await parseAllRedirects({
    redirectsFiles: [],
    netlifyConfigPath: options.tomlPath,
    configRedirects: [],
    minimal: false,
  });
  if (errors.length > 0) throw new Error(`netlify.toml redirects rejected by Netlify's parser: ${errors.map((e) => e.message).join('; ')}`);
  const headerRules = await parseAllHeaders({ headersFiles: [], netlifyConfigPath: options.tomlPath, configHeaders: [], minimal: false });
  if (headerRules.errors.length > 0)
    throw new Error(`netlify.toml headers rejected: ${headerRules.errors.map((e) => e.message).join('; ')}`);
  // netlify-redirector takes the backend's shape (as netlify-cli passes it): `from` is `origin`, `query` is `params`.
  const rules = (redirects as Record<string, unknown>[]).map(({ from, query, conditions, signed: _signed, ...rest }) => ({
    ...rest,
    origin: from,
    params: query,
    conditions,
  }));
  const matcher = await redirector.parseJSON(JSON.stringify(rules), {});

  const toml = TOML.parse(readFileSync(options.tomlPath, 'utf8')) as {
    edge_functions?: { function: string; pattern?: string; path?: string }[];
  };
  const declarations = (toml.edge_functions ?? []).map((d) => {
    if (d.pattern === undefined) throw new Error('the simulator only knows regex (pattern) declarations');
    const fn = options.edgeFunctions[d.function];
    if (!fn) throw new Error(`netlify.toml declares an unknown edge function ${d.function}`);
    return { name: d.function, regex: new RegExp(d.pattern), fn };
  });
  const edgeFunctionFor = (path: string) => declarations.find((d) => d.regex.test(path))?.name;

  const fileAt = (urlPath: string): string | undefined => {
    const parts = urlPath.split('/').filter((p) => p !== '');
    if (urlPath.endsWith('/') || parts.some((p) => p.startsWith('.') || p.includes('\\') || p.includes('\0'))) return undefined;
    const file = join(options.site, ...parts);
    try {
      return lstatSync(file).isFile() ? file : undefined;
    } catch {
      return undefined;
    }
  };
  const headersFor = (path: string): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const rule of headerRules.headers as { forRegExp: RegExp; values: Record<string, string> }[]) {
      if (rule.forRegExp.test(path)) Object.assign(out, rule.values);
    }
    return out;
  };

  /** Rules and static files: what `context.next()` continues with. */
  const serveStatic = (method: string, url: URL): Response => {
    let path: string;
    try {
      path = decodeURIComponent(url.pathname);
    } catch {
      return new Response(NETLIFY_404, { status: 400 });
    }
    if (method !== 'GET' && method !== 'HEAD') return new Response('Method Not Allowed\n', { status: 405 });
    const match = matcher.match({
      scheme: 'https',
      host: url.hostname,
      path,
      query: url.search.slice(1),
      getHeader: () => '',
      getCookie: () => '',
    });
    const own = fileAt(path);
    const body = (file: string) => (method === 'HEAD' ? null : readFileSync(file));
    if (own && (!match || !match.force)) return new Response(body(own), { status: 200, headers: headersFor(path) });
    if (!match) return new Response(NETLIFY_404, { status: 404, headers: { 'content-type': 'text/html; charset=utf-8' } });
    if (match.status >= 300 && match.status < 400) return new Response(null, { status: match.status, headers: { location: match.to } });
    const targetPath = decodeURIComponent(new URL(match.to, url).pathname);
    const target = fileAt(targetPath);
    if (!target) return new Response(NETLIFY_404, { status: 404, headers: { 'content-type': 'text/html; charset=utf-8' } });
    return new Response(body(target), {
      status: match.status,
      headers: headersFor(options.headerPath === 'requested' ? path : targetPath),
    });
  };

  let origin = '';
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', origin);
    const method = req.method ?? 'GET';
    const declaration = declarations.find((d) => d.regex.test(url.pathname));
    let response: Response;
    if (declaration) {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
      const request = new Request(url, { method, headers });
      response = (await declaration.fn(request, { next: async () => serveStatic(method, url) })) ?? serveStatic(method, url);
    } else {
      response = serveStatic(method, url);
    }
    const headers: Record<string, string> = {};
    response.headers.forEach((v, k) => {
      headers[k] = v;
    });
    const bytes = method === 'HEAD' || response.body === null ? undefined : Buffer.from(await response.arrayBuffer());
    res.writeHead(response.status, headers);
    res.end(bytes);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`edge function or simulator failed: ${String(error)}\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  origin = `http://127.0.0.1:${address.port}`;
  return {
    origin,
    edgeFunctionFor,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
