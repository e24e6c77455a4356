/**
 * The head of an HTTP/1.1 request, read straight from a connection's bytes for the origin's quick
 * path (./origin-server.ts): only the plainest form a CDN or a client sends for a document.
 *
 * Whatever this module is not sure Node's own HTTP server would read the same way is 'other', and
 * the quick path leaves the connection to that server: another method or version, a body, a target that
 * is not plain, a header line with bytes beyond printable ASCII, a duplicate of a header that
 * matters, a missing Host, an Upgrade or Expect, a head longer than MAX_HEAD_BYTES. A head that
 * is not whole yet is 'partial'. The quick path only answers what it read here; the server answers
 * the rest as it always has.
 */
import { PLAIN_TARGET } from './request-target.js';

export interface RequestHead {
  method: 'GET' | 'HEAD';
  /** The request target, as sent (a plain one: see PLAIN_TARGET). */
  target: string;
  /** The If-None-Match header's value, trimmed, if sent. */
  ifNoneMatch: string | undefined;
  /** The client asked to close the connection after this answer (`Connection: close`). */
  close: boolean;
  /** Where the head ends (the offset just past its blank line). */
  end: number;
}

/** Heads longer than this are left to Node's server (its own limit is larger, and it answers 431). */
const MAX_HEAD_BYTES = 8 * 1024;

const REQUEST_LINE = /^(GET|HEAD) (\S+) HTTP\/1\.1$/;
/** A header line: a token name, a colon, a value of printable ASCII and tabs (no obs-fold, no CR or LF). */
const HEADER_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):([\t\x20-\x7e]*)$/;
/** Headers that mean something other than a plain read, or a body. */
const NOT_PLAIN = new Set(['content-length', 'transfer-encoding', 'expect', 'upgrade']);

/** A request line not yet whole that could still be one REQUEST_LINE reads. */
const REQUEST_LINE_SO_FAR =
  /^(?:G|GE|GET|H|HE|HEA|HEAD|(?:GET|HEAD) [\x21-\x7e]*(?: (?:H|HT|HTT|HTTP|HTTP\/|HTTP\/1|HTTP\/1\.|HTTP\/1\.1\r?)?)?)?$/;
/** A header line not yet whole that could still be one HEADER_LINE reads. */
const HEADER_LINE_SO_FAR = /^[!#$%&'*+.^_`|~0-9A-Za-z-]*(?::[\t\x20-\x7e]*)?\r?$/;

/** What a head's lines say, once each is as readHead wants it. */
interface HeadLines {
  method: RequestHead['method'];
  target: string;
  host: string | undefined;
  ifNoneMatch: string | undefined;
  connection: string | undefined;
}

/** Reads the head that starts at `start` in `bytes`. */
export function readHead(bytes: Buffer, start: number): RequestHead | 'partial' | 'other' {
  const blank = bytes.indexOf('\r\n\r\n', start, 'latin1');
  if (blank === -1) return bytes.length - start > MAX_HEAD_BYTES ? 'other' : 'partial';
  if (blank - start > MAX_HEAD_BYTES) return 'other';
  const head = readLines(bytes.toString('latin1', start, blank).split('\r\n'));
  if (head === undefined || head.host === undefined) return 'other';
  const { method, target, ifNoneMatch, connection } = head;
  if (connection !== undefined && connection !== 'keep-alive' && connection !== 'close') return 'other';
  return { method, target, ifNoneMatch, close: connection === 'close', end: blank + 4 };
}

/**
 * Whether the head that starts at `start`, not whole yet ('partial'), could still be one readHead
 * reads: every line so far as it wants it, the last one a beginning of such a line.
 */
export function plainSoFar(bytes: Buffer, start: number): boolean {
  const lines = bytes.toString('latin1', start).split('\r\n');
  const last = lines.pop()!;
  if (lines.length === 0) return REQUEST_LINE_SO_FAR.test(last);
  return readLines(lines) !== undefined && HEADER_LINE_SO_FAR.test(last);
}

/** A head's lines (without the blank line), or undefined at the first that is not as readHead wants it. */
function readLines(lines: string[]): HeadLines | undefined {
  const request = REQUEST_LINE.exec(lines[0]!);
  if (!request || !PLAIN_TARGET.test(request[2]!)) return undefined;
  const head: HeadLines = {
    method: request[1] as RequestHead['method'],
    target: request[2]!,
    host: undefined,
    ifNoneMatch: undefined,
    connection: undefined,
  };
  for (let i = 1; i < lines.length; i++) {
    const header = HEADER_LINE.exec(lines[i]!);
    if (!header) return undefined;
    const name = header[1]!.toLowerCase();
    // Only spaces and tabs can surround it here; one class to the end keeps the match linear.
    const value = header[2]!.trim();
    if (NOT_PLAIN.has(name)) return undefined;
    if (name === 'host') {
      // Node's server refuses a request without a Host (400): an empty or a second one is its to judge.
      if (head.host !== undefined || value === '') return undefined;
      head.host = value;
    } else if (name === 'if-none-match') {
      if (head.ifNoneMatch !== undefined) return undefined;
      head.ifNoneMatch = value;
    } else if (name === 'connection') {
      if (head.connection !== undefined) return undefined;
      head.connection = value.toLowerCase();
    }
  }
  return head;
}
