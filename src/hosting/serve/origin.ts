/**
 * The origin server: `serve-handler` (the routing foundation of the `serve` package) behind a thin
 * router derived from the route table, so that it answers every request form exactly as Netlify does
 * with the committed netlify.toml and edge function.
 *
 * serve-handler is only ever handed the URL of a file the table names (a canonical profile, the
 * creators list, an error document): it never sees the request path itself, so dotfiles, the
 * bookkeeping folder, directories and anything outside the out dir cannot be reached, whatever the
 * encoding. It brings what a file server must get right: streaming, HEAD, Content-Length, strong
 * ETags. If-None-Match -> 304 is decided here on every path, as RFC 9110 says (matchesIfNoneMatch in
 * ../routes/routing.js, the very rule the Worker embeds).
 *
 * GET and HEAD of the table's small files (profiles, error documents) are answered from memory first
 * (./cached-answers.ts, ./file-cache.ts), the same bytes serve-handler would send, checked against
 * the file on every request; whatever that path cannot answer comes here. The plainest of those
 * requests are answered before Node's request handling sees them (./origin-server.ts).
 */
import { existsSync, statSync } from 'node:fs';
import type { IncomingMessage, OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { resolve as resolvePath } from 'node:path';
import handler from 'serve-handler';
import { outputError, usageError } from '../../core/errors.js';
import { hostPort } from '../../core/text.js';
import type { ErrorCode } from '../../render/documents.js';
import { pinnedFiles, type PinnedFiles } from './pinned-files.js';
import { CachedAnswers } from './cached-answers.js';
import { matchesIfNoneMatch } from '../routes/routing.js';
import { OriginServer } from './origin-server.js';
import type { QuickAnswerer } from './quick-connection.js';
import { routePlainTarget, routeRequest } from './request-target.js';
import {
  ALLOW_HEADER,
  OUTSIDE_BODY,
  OUTSIDE_HEADERS,
  PREFLIGHT_HEADERS,
  ROUTES,
  VARY_HEADER,
  type Resolution,
  type RouteTable,
} from '../routes/routes.js';
import { acceptsGzip, errorAnswerBody } from '../routes/routing.js';

type Methods = NonNullable<Parameters<typeof handler>[3]>;

export interface OriginOptions {
  /** The snapshot (out dir) to serve. */
  out: string;
  /** Called once per finished request with a ready access-log line (no trailing newline). */
  log?: (line: string) => void;
  table?: RouteTable;
  /** Bytes of small documents kept in memory at most (default 64 MiB; 0 keeps none). */
  cacheBytes?: number;
  /** Told the status of every answer sent (the metrics count them). */
  count?: (status: number) => void;
  /** false: every request goes through Node's request handling (./origin-server.ts); the tests compare the two. */
  quickPath?: boolean;
}

export interface Origin {
  server: OriginServer;
  /** Handles one request (exported so it can be mounted in another server). */
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
}

export function createOrigin(options: OriginOptions): Origin {
  const out = resolvePath(options.out);
  const table = options.table ?? ROUTES;
  checkSnapshot(out, options.out, table);
  // Answers from the cache set no header by name: the access log learns their length here.
  const lengths = options.log ? new WeakMap<ServerResponse, number>() : undefined;
  const cached = new CachedAnswers(out, table, options.cacheBytes, lengths && ((res, length) => lengths.set(res, length)));
  const responder = new Responder(out, table, serveConfig(out, table), cached);
  const handle = (req: IncomingMessage, res: ServerResponse) => responder.handle(req, res);
  const { log, count } = options;
  const server = new OriginServer(
    (req, res) => {
      if (log) logWhenClosed(req, res, log, lengths);
      if (count) res.once('finish', () => count(res.statusCode));
      handle(req, res).catch((error: unknown) => answerFailure(res, error));
    },
    options.quickPath === false ? undefined : quickAnswerer(cached, table, options),
  );
  return { server, handle };
}

/**
 * The quick path's answers (./origin-server.ts): what the cache answers for a request head, counted
 * and logged as the full path counts and logs its own.
 */
function quickAnswerer(cached: CachedAnswers, table: RouteTable, { log, count }: OriginOptions): QuickAnswerer {
  return (head, socket) => {
    const started = log ? process.hrtime.bigint() : 0n;
    // readHead reads only plain targets: the test routeRequest starts with is already passed.
    const resolution = routePlainTarget(head.target, table);
    // A file with a gzip variant is negotiated on the full path, which adds Vary.
    if (resolution.kind === 'file' && resolution.gzip !== undefined) return undefined;
    const answer = cached.quickAnswer(head, resolution);
    if (answer === undefined) return undefined;
    count?.(answer.status);
    if (log) {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      log(accessLogLine(socket.remoteAddress ?? '-', head.method, head.target, answer.status, answer.length ?? '-', ms));
    }
    return answer;
  };
}

/** Refuses to serve a folder that holds no snapshot (its error documents are what every miss answers). */
function checkSnapshot(out: string, given: string, table: RouteTable): void {
  for (const code of Object.keys(table.errors) as ErrorCode[]) {
    const file = resolvePath(out, table.errors[code].file);
    if (!existsSync(file) || !statSync(file).isFile()) {
      throw outputError(
        `${given} holds no snapshot (${table.errors[code].file} is missing)`,
        `run profile-snapshot build --out ${given} first`,
      );
    }
  }
}

type ServeConfig = Parameters<typeof handler>[2];

/** serve-handler's settings: the contract's headers on every answer, nothing it would add of its own. */
function serveConfig(out: string, table: RouteTable): ServeConfig {
  const headers = [
    ...Object.entries(table.headers).map(([key, value]) => ({ key, value })),
    // Answers are whole JSON documents: no partial content (Range is ignored, see below).
    { key: 'Accept-Ranges', value: 'none' },
    // serve-handler's default for downloads; meaningless for an API.
    { key: 'Content-Disposition', value: null as unknown as string },
  ];
  return {
    public: out,
    directoryListing: false,
    etag: true,
    symlinks: false,
    cleanUrls: false,
    // `**` leaves out dot files, and a gzip variant is one (its media type is still the document's).
    headers: [
      { source: '**', headers },
      { source: '**/.*', headers },
    ],
  };
}

/**
 * Answers one request as the route table says: from the cache when it can (./cached-answers.ts),
 * else with the handler, the file sender and the error sender.
 */
class Responder {
  constructor(
    private readonly out: string,
    private readonly table: RouteTable,
    private readonly config: ServeConfig,
    private readonly cached: CachedAnswers,
  ) {}

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const resolution = this.negotiate(req, res, routeRequest(req.url ?? '/', this.table));
    if (resolution.kind === 'outside') {
      res.writeHead(404, OUTSIDE_HEADERS);
      res.end(req.method === 'HEAD' ? undefined : OUTSIDE_BODY);
      return;
    }
    if ((req.method === 'GET' || req.method === 'HEAD') && this.cached.answer(req, res, resolution)) return;
    const files = pinnedFiles();
    res.once('close', files.close);
    for (const [name, value] of Object.entries(this.table.headers)) res.setHeader(name, value);
    if (req.method === 'OPTIONS') {
      for (const [name, value] of Object.entries(PREFLIGHT_HEADERS)) res.setHeader(name, value);
      res.writeHead(204);
      res.end();
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', ALLOW_HEADER);
      // serve-handler answers anything it is given; make it read the error document with GET.
      req.method = 'GET';
      return this.sendError(req, res, files, 'METHOD_NOT_ALLOWED');
    }
    switch (resolution.kind) {
      case 'error':
        return this.sendError(req, res, files, resolution.code);
      case 'file':
        return this.sendFile(req, res, files, resolution.file, 200, () => this.sendError(req, res, files, 'NOT_FOUND'));
      case 'profile':
        return this.sendFile(req, res, files, resolution.file, 200, () => this.sendError(req, res, files, 'USER_NOT_FOUND'));
    }
  }

  /**
   * A file with a gzip variant, as nginx's gzip_static does: the variant, with `Content-Encoding:
   * gzip`, to a client that accepts gzip (when the snapshot has one); `Vary: Accept-Encoding` on both.
   * Each encoding is its own file, so its ETag, length and 304 are its own too.
   */
  private negotiate(req: IncomingMessage, res: ServerResponse, resolution: Resolution): Resolution {
    if (resolution.kind !== 'file' || resolution.gzip === undefined) return resolution;
    if (req.method !== 'GET' && req.method !== 'HEAD') return resolution;
    res.setHeader('Vary', VARY_HEADER.Vary);
    if (!acceptsGzip(req.headers['accept-encoding']) || !existsSync(`${this.out}/${resolution.gzip}`)) return resolution;
    res.setHeader('Content-Encoding', 'gzip');
    return { kind: 'file', file: resolution.gzip };
  }

  /** Hands serve-handler one file of the out dir, with the status the route decided. */
  private async sendFile(
    req: IncomingMessage,
    res: ServerResponse,
    files: PinnedFiles,
    file: string,
    status: number,
    onMissing: () => Promise<void>,
  ): Promise<void> {
    // Ranges would split a JSON document (and serve-handler would answer 206/416): always send it whole.
    delete req.headers.range;
    // serve-handler's own 304 compares the header as one string, and would take an error's place:
    // the condition is decided here, on a 200 only.
    const condition = req.headers['if-none-match'];
    delete req.headers['if-none-match'];
    if (status === 200 && condition !== undefined) notModifiedOnMatch(res, condition);
    req.url = `/${file}`;
    res.statusCode = status;
    await handler(req, res, this.config, {
      lstat: files.lstat as unknown as Methods['lstat'],
      createReadStream: files.createReadStream as unknown as Methods['createReadStream'],
      // The file vanished between routing and reading (a build removed the profile): a miss.
      sendError: async (...args: unknown[]) => {
        const spec = args[6] as { statusCode?: number } | undefined;
        if (spec?.statusCode === 404) return onMissing();
        // Never reached for a file the table names; answer like any other internal failure.
        throw new Error(`serve-handler refused ${file}: ${spec?.statusCode ?? 'unknown'}`);
      },
    });
  }

  private sendError(req: IncomingMessage, res: ServerResponse, files: PinnedFiles, code: ErrorCode): Promise<void> {
    const { status, file } = this.table.errors[code];
    return this.sendFile(req, res, files, file, status, async () => this.sendFallback(res, status, code));
  }

  /** The error document rendered in memory: only if the snapshot lost its error files meanwhile. */
  private sendFallback(res: ServerResponse, status: number, code: ErrorCode): void {
    if (res.headersSent) return void res.end();
    res.writeHead(status, this.table.headers);
    res.end(errorAnswerBody(code, new Date().toISOString()));
  }
}

/**
 * Turns serve-handler's 200 into a 304 when the ETag it computed matches `condition`: the status
 * line, the headers already set (the contract's, Vary) and the ETag, without the representation's
 * own (RFC 9110 15.4.5). serve-handler then pipes the file into the response; the stream is closed
 * unread instead, so a large list is not read for nothing, and the answer ended.
 */
function notModifiedOnMatch(res: ServerResponse, condition: string): void {
  const writeHead = res.writeHead.bind(res) as (status: number, headers?: OutgoingHttpHeaders) => ServerResponse;
  const answer = (status: number, headers?: OutgoingHttpHeaders): ServerResponse => {
    const etag = headers?.ETag;
    if (status !== 200 || typeof etag !== 'string' || !matchesIfNoneMatch(condition, etag)) return writeHead(status, headers);
    res.removeHeader('Content-Encoding');
    res.once('pipe', (body: Readable) => {
      body.destroy();
      res.end();
    });
    return writeHead(304, { ETag: etag });
  };
  res.writeHead = answer as ServerResponse['writeHead'];
}

/** Logs the request once its connection closes ('close', not 'finish': a client that hung up is logged too). */
function logWhenClosed(
  req: IncomingMessage,
  res: ServerResponse,
  log: (line: string) => void,
  lengths?: WeakMap<ServerResponse, number>,
): void {
  const started = process.hrtime.bigint();
  const method = req.method ?? '';
  const url = req.url ?? '';
  // Read now: once the connection has closed, the socket no longer knows its peer.
  const client = req.socket.remoteAddress ?? '-';
  res.once('close', () => {
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const length = res.getHeader('content-length') ?? lengths?.get(res) ?? '-';
    log(accessLogLine(client, method, url, res.statusCode, length, ms));
  });
}

function accessLogLine(client: string, method: string, url: string, status: number, length: unknown, ms: number): string {
  // The request target is quoted as JSON so that no request can forge a log line.
  return `${new Date().toISOString()} ${client} ${JSON.stringify(method)} ${JSON.stringify(url)} ${status} ${length} ${ms.toFixed(1)}ms`;
}

/** A bug or an I/O failure: answer 500 once, keep serving. */
function answerFailure(res: ServerResponse, error: unknown): void {
  if (!res.headersSent) {
    res.writeHead(500, { ...OUTSIDE_HEADERS, 'Cache-Control': 'no-store' });
    res.end('Internal Server Error\n');
  } else {
    res.destroy(error instanceof Error ? error : undefined);
  }
}

/** Listens; resolves with the actual address (port 0 picks a free port). */
export async function listen(server: Server, port: number, host: string): Promise<{ port: number; host: string }> {
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  const address = server.address();
  return { port: typeof address === 'object' && address ? address.port : port, host };
}

/** listen() for the `serve` command: an address it cannot have (busy, not local) is a usage error naming it. */
export async function listenOrRefuse(server: Server, port: number, host: string): Promise<{ port: number; host: string }> {
  try {
    return await listen(server, port, host);
  } catch (cause) {
    throw usageError(`cannot listen on ${hostPort({ host, port })}`, 'pick another --port or --host', cause);
  }
}

/**
 * Graceful stop (on SIGTERM or SIGINT): stops accepting, closes idle keep-alive connections, lets
 * requests in flight finish (up to `graceMs`), then closes what is left.
 */
export function closeGracefully(server: Server, graceMs = 5000): Promise<void> {
  return new Promise((resolveClose) => {
    // Keep-alive connections with no request in flight would hold close() open: end them now, and
    // again every tick until the rest have finished their request (a connection only counts as idle
    // once its last response is fully written).
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    const grace = setTimeout(() => server.closeAllConnections(), graceMs);
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(grace);
      resolveClose();
    });
    server.closeIdleConnections();
  });
}
