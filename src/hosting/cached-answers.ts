/**
 * The origin's answers to GET and HEAD of the route table's files, from the file cache: byte for byte
 * what serve-handler's path answers (status, the same headers in the same order, body), without its
 * per-request work (URL parsing, header rules matched by glob, streams, a descriptor per file).
 *
 * When the cache cannot answer (a directory, a symlink, a large file, an error document gone), it
 * declines having written nothing, and the origin answers the request on serve-handler's path.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorCode } from '../render/documents.js';
import { FILE_CACHE_DEFAULTS, FileCache, type CachedFile } from './file-cache.js';
import type { Resolution, RouteTable } from './routes.js';

export class CachedAnswers {
  /** The contract's headers as a flat list, for `writeHead` (it takes a list without copying it into a map). */
  private readonly contractHeaders: string[];
  private readonly cache: FileCache;

  constructor(
    /** The out dir, resolved. */
    private readonly out: string,
    private readonly table: RouteTable,
    /** Bytes of documents kept in memory at most (FILE_CACHE_DEFAULTS when not given). */
    cacheBytes: number | undefined,
    /** Told the body length of each answer (the access log reads it). */
    private readonly noteLength?: (res: ServerResponse, length: number) => void,
  ) {
    this.contractHeaders = Object.entries(table.headers).flat();
    this.cache = new FileCache({ ...FILE_CACHE_DEFAULTS, maxBytes: cacheBytes ?? FILE_CACHE_DEFAULTS.maxBytes });
  }

  /** Answers a GET or HEAD and returns true, or returns false having written nothing. */
  answer(req: IncomingMessage, res: ServerResponse, resolution: Resolution): boolean {
    switch (resolution.kind) {
      case 'error':
        return this.error(req, res, resolution.code);
      case 'file':
        return this.file(req, res, resolution.file, 'NOT_FOUND');
      case 'profile':
        return this.file(req, res, resolution.file, 'USER_NOT_FOUND');
      default:
        return false;
    }
  }

  private file(req: IncomingMessage, res: ServerResponse, file: string, missing: ErrorCode): boolean {
    // The table's files and canonical usernames hold no dot segment: joining is resolving.
    const found = this.cache.lookup(`${this.out}/${file}`);
    if (found === 'missing') return this.error(req, res, missing);
    if (found === undefined) return false;
    // serve-handler compares the header as a whole string, and only for a 200 answer.
    if (req.headers['if-none-match'] === found.etag) {
      res.writeHead(304, this.contractHeaders);
      res.end();
      return true;
    }
    this.send(req, res, 200, found);
    return true;
  }

  private error(req: IncomingMessage, res: ServerResponse, code: ErrorCode): boolean {
    const { status, file } = this.table.errors[code];
    const found = this.cache.lookup(`${this.out}/${file}`);
    // An error document gone missing: serve-handler's path has the fallback for it.
    if (typeof found !== 'object') return false;
    this.send(req, res, status, found);
    return true;
  }

  /** The headers serve-handler sends after the contract's: length, no ranges, the ETag. */
  private send(req: IncomingMessage, res: ServerResponse, status: number, found: CachedFile): void {
    found.headers ??= [...this.contractHeaders, 'Content-Length', String(found.size), 'Accept-Ranges', 'none', 'ETag', found.etag];
    res.writeHead(status, found.headers);
    res.end(req.method === 'HEAD' ? undefined : found.body);
    this.noteLength?.(res, found.size);
  }
}
