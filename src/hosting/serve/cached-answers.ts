/**
 * The origin's answers to GET and HEAD of the route table's files, from the file cache: byte for byte
 * what serve-handler's path answers (status, the same headers in the same order, body), without its
 * per-request work (URL parsing, header rules matched by glob, streams, a descriptor per file).
 *
 * When the cache cannot answer (a directory, a symlink, a large file, an error document gone), it
 * declines having written nothing, and the origin answers the request on serve-handler's path.
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { ErrorCode } from '../../render/documents.js';
import { matchesIfNoneMatch } from '../routes/routing.js';
import { FILE_CACHE_DEFAULTS, FileCache, type CachedFile } from './file-cache.js';
import type { QuickAnswer } from './quick-connection.js';
import type { RequestHead } from './request-head.js';
import type { Resolution, RouteTable } from '../routes/routes.js';

export class CachedAnswers {
  /** The contract's headers as a flat list, for `writeHead` (it takes a list without copying it into a map). */
  private readonly contractHeaders: string[];
  private readonly cache: FileCache;
  /** By status: its status line and the contract's headers, as the quick path sends them. */
  private readonly statusHeads = new Map<number, Buffer>();

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
    // Each version's own header lines, as the quick path sends them, are part of its cache entry.
    const extraOf = (size: number, etag: string) => headerLines(ownHeaders(size, etag));
    this.cache = new FileCache({ ...FILE_CACHE_DEFAULTS, maxBytes: cacheBytes ?? FILE_CACHE_DEFAULTS.maxBytes, extraOf });
  }

  /** Answers a GET or HEAD and returns true, or returns false having written nothing. */
  answer(req: IncomingMessage, res: ServerResponse, resolution: Resolution): boolean {
    const decided = this.decide(req.headers['if-none-match'], resolution);
    if (decided === undefined) return false;
    const { status, found } = decided;
    if (status === 304) {
      // No representation metadata but the contract's (RFC 9110 15.4.5): the variant's encoding goes.
      res.removeHeader('Content-Encoding');
      res.writeHead(304, [...this.contractHeaders, 'ETag', found.etag]);
      res.end();
      return true;
    }
    res.writeHead(status, [...this.contractHeaders, ...ownHeaders(found.size, found.etag)]);
    res.end(req.method === 'HEAD' ? undefined : found.body);
    this.noteLength?.(res, found.size);
    return true;
  }

  /**
   * The same answer as bytes for the origin's quick path (./origin-server.ts), or undefined where
   * answer() would return false: the status line and the contract's headers (shared by every answer
   * of that status), then the version's own (length, no ranges, ETag), kept with it in the cache;
   * a 304's, its ETag line alone.
   */
  quickAnswer(head: RequestHead, resolution: Resolution): QuickCachedAnswer | undefined {
    const decided = this.decide(head.ifNoneMatch, resolution);
    if (decided === undefined) return undefined;
    const { status, found } = decided;
    if (status === 304) return { status, length: undefined, head: [this.statusHead(304), etagLine(found)], body: undefined };
    const body = head.method === 'HEAD' ? undefined : found.body;
    return { status, length: found.size, head: [this.statusHead(status), found.extra], body };
  }

  private statusHead(status: number): Buffer {
    let built = this.statusHeads.get(status);
    if (built === undefined) {
      built = Buffer.from(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${headerLines(this.contractHeaders)}`, 'latin1');
      this.statusHeads.set(status, built);
    }
    return built;
  }

  /** What the answer is: its status and document, or undefined for serve-handler's path. */
  private decide(ifNoneMatch: string | undefined, resolution: Resolution): Decided | undefined {
    switch (resolution.kind) {
      case 'error':
        return this.error(resolution.code);
      case 'file':
        return this.file(ifNoneMatch, resolution.file, 'NOT_FOUND');
      case 'profile':
        return this.file(ifNoneMatch, resolution.file, 'USER_NOT_FOUND');
      default:
        return undefined;
    }
  }

  private file(ifNoneMatch: string | undefined, file: string, missing: ErrorCode): Decided | undefined {
    // The table's files and canonical usernames hold no dot segment: joining is resolving.
    const found = this.cache.lookup(`${this.out}/${file}`);
    if (found === 'missing') return this.error(missing);
    if (found === undefined) return undefined;
    // Only a 200 may become a 304: a condition never turns an error into "not modified".
    return { status: matchesIfNoneMatch(ifNoneMatch, found.etag) ? 304 : 200, found };
  }

  private error(code: ErrorCode): Decided | undefined {
    const { status, file } = this.table.errors[code];
    const found = this.cache.lookup(`${this.out}/${file}`);
    // An error document gone missing: serve-handler's path has the fallback for it.
    if (typeof found !== 'object') return undefined;
    return { status, found };
  }
}

/**
 * What serve-handler sends after the contract's headers: length, no ranges, the ETag. The ETag
 * last: a 304 sends that line alone (etagLine).
 */
function ownHeaders(size: number, etag: string): string[] {
  return ['Content-Length', String(size), 'Accept-Ranges', 'none', 'ETag', etag];
}

/** The last of a version's own header lines, its ETag: what a 304 adds to the contract's headers. */
function etagLine(found: CachedFile): Buffer {
  return found.extra.subarray(found.extra.length - ('ETag: '.length + found.etag.length + 2));
}

/** An answer from memory and its document (a 304 takes only its ETag). */
interface Decided {
  status: number;
  found: CachedFile;
}

/** A quick answer, with what the access log and the tally need to know of it. */
export interface QuickCachedAnswer extends QuickAnswer {
  status: number;
  /** The body's length (a HEAD's too: it is what Content-Length says); undefined for a 304. */
  length: number | undefined;
}

/** Header lines as Node's server writes a `writeHead` list: `name: value` and CRLF each. */
function headerLines(headers: string[]): string {
  let text = '';
  for (let i = 0; i < headers.length; i += 2) text += `${headers[i]}: ${headers[i + 1]}\r\n`;
  return text;
}
