/**
 * SigV4 for the bulk PUT path (fast-put.ts): the signature the SDK's SignatureV4 computes for an S3
 * request as S3Client configures its signer (the path signed as sent, not escaped again; the body's
 * SHA-256 signed and sent as x-amz-content-sha256), with Node's crypto called directly. The SDK's
 * signer clones the request twice, goes through async hash wrappers for each of its hashes, and
 * hashes the credentials on every request to look up its cached signing key: much of what a PUT
 * costs the publisher's core (scripts/bench-put-path.mjs). Here the signing key is derived once per
 * day, region, service and credentials, and kept, and each SHA-256 is one call (`crypto.hash`),
 * with no hash object made and thrown away per request.
 *
 * test/publish/sigv4.test.ts checks it against the SDK's own signer on thousands of random requests
 * (keys, header names and values, dates, regions, session tokens); test/publish/fast-put.test.ts
 * checks the requests on the wire against PutObjectCommand's.
 */
import { escapeUri as sdkEscapeUri, escapeUriPath as sdkEscapeUriPath } from '@smithy/core/protocols';
import { createHmac, hash } from 'node:crypto';

export interface Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string | undefined;
}

/** A request as it will be sent, before it is signed: `path` already escaped, header names as sent. */
export interface UnsignedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';
const CONTENT_SHA256 = 'x-amz-content-sha256';
/** Headers the signer sets itself: one given is dropped (the SDK's GENERATED_HEADERS). */
const GENERATED = new Set(['authorization', 'x-amz-date', 'date']);
/** Headers a signature never covers (the SDK's ALWAYS_UNSIGNABLE_HEADERS and its patterns). */
const UNSIGNABLE = new Set([
  'authorization',
  'cache-control',
  'connection',
  'expect',
  'from',
  'keep-alive',
  'max-forwards',
  'pragma',
  'referer',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'user-agent',
  'x-amzn-trace-id',
]);
const UNSIGNABLE_PREFIX = /^(?:proxy-|sec-)/;

/** The signing key of one day, region and service for one set of credentials. */
interface DayKey {
  readonly shortDate: string;
  readonly credentials: Credentials;
  readonly key: Buffer;
}

export class PutSigner {
  private dayKey: DayKey | undefined;
  private second = Number.NaN;
  private secondText = '';

  constructor(
    private readonly region: string,
    private readonly service: string,
  ) {}

  /** The request's headers with the signature's added, as SignatureV4.signRequest returns them. */
  sign(request: UnsignedRequest, credentials: Credentials, date: Date): Record<string, string> {
    assertCredentials(credentials);
    const longDate = this.longDate(date);
    const shortDate = longDate.slice(0, 8);
    const scope = `${shortDate}/${this.region}/${this.service}/aws4_request`;
    const headers: Record<string, string> = {};
    for (const name of Object.keys(request.headers)) if (!GENERATED.has(name.toLowerCase())) headers[name] = request.headers[name]!;
    headers['x-amz-date'] = longDate;
    if (credentials.sessionToken) headers['x-amz-security-token'] = credentials.sessionToken;
    const given = Object.keys(headers).find((name) => name.toLowerCase() === CONTENT_SHA256);
    const payloadHash = given === undefined ? hash('sha256', request.body) : headers[given]!;
    if (given === undefined) headers[CONTENT_SHA256] = payloadHash;
    const canonical = canonicalHeaders(headers);
    const names = Object.keys(canonical).sort();
    const canonicalRequest = [
      request.method,
      request.path,
      canonicalQuery(request.query),
      ...names.map((name) => `${name}:${canonical[name]}`),
      '',
      names.join(';'),
      payloadHash,
    ].join('\n');
    const stringToSign = `${ALGORITHM}\n${longDate}\n${scope}\n${hash('sha256', canonicalRequest)}`;
    const signature = createHmac('sha256', this.signingKey(credentials, shortDate)).update(stringToSign).digest('hex');
    headers['authorization'] =
      `${ALGORITHM} Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`;
    return headers;
  }

  /** `date` as SigV4 writes it (20261201T052311Z), formatted once per second. */
  private longDate(date: Date): string {
    const second = Math.floor(date.getTime() / 1000);
    if (second !== this.second) {
      this.second = second;
      this.secondText = date
        .toISOString()
        .replace(/\.\d{3}Z$/, 'Z')
        .replace(/[-:]/g, '');
    }
    return this.secondText;
  }

  /** The key of `shortDate`: derived again only when the day or the credentials changed. */
  private signingKey(credentials: Credentials, shortDate: string): Buffer {
    const kept = this.dayKey;
    if (kept !== undefined && kept.shortDate === shortDate && sameCredentials(kept.credentials, credentials)) return kept.key;
    let key: Buffer | string = `AWS4${credentials.secretAccessKey}`;
    for (const part of [shortDate, this.region, this.service, 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
    this.dayKey = { shortDate, credentials: { ...credentials }, key: key as Buffer };
    return key as Buffer;
  }
}

const sameCredentials = (a: Credentials, b: Credentials) =>
  a.accessKeyId === b.accessKeyId && a.secretAccessKey === b.secretAccessKey && a.sessionToken === b.sessionToken;

/** The SDK's check, with its message. */
function assertCredentials(credentials: Credentials): void {
  if (typeof credentials !== 'object' || typeof credentials.accessKeyId !== 'string' || typeof credentials.secretAccessKey !== 'string')
    throw new Error('Resolved credential object is not valid');
}

/**
 * Lower-cased names to values folded as SigV4 folds them, without the unsignable ones. Names are
 * visited in sorted order as given, so of two that differ in case only, the last sorted wins (as in
 * the SDK).
 */
function canonicalHeaders(headers: Record<string, string>): Record<string, string> {
  const canonical: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const name of Object.keys(headers).sort()) {
    const value = headers[name];
    if (value === undefined || value === null) continue;
    const lower = name.toLowerCase();
    if (UNSIGNABLE.has(lower) || UNSIGNABLE_PREFIX.test(lower)) continue;
    canonical[lower] = NEEDS_FOLDING.test(value) ? fold(value) : value;
  }
  return canonical;
}

/** A value SigV4 folds: line ends and tabs, runs of blanks, a blank at either end. */
const NEEDS_FOLDING = /[\r\n\t]| {2}|^ | $/;
const fold = (value: string) =>
  value
    .replace(/[\r\n]/g, ' ')
    .replace(/[ \t]+/g, ' ')
    .replace(/^ | $/g, '');

/** The query's pairs escaped and sorted by escaped name, without a signature of its own. */
function canonicalQuery(query: Readonly<Record<string, string>>): string {
  const pairs: [string, string][] = [];
  for (const name of Object.keys(query)) {
    if (name.toLowerCase() === 'x-amz-signature') continue;
    const escaped = escapeUri(name);
    pairs.push([escaped, `${escaped}=${escapeUri(query[name]!)}`]);
  }
  return pairs
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, pair]) => pair)
    .join('&');
}

/**
 * Text RFC 3986 leaves as it is (most query values), and paths it leaves as they are but for their
 * slashes (most keys): escaping them would copy them unchanged.
 */
const UNRESERVED = /^[A-Za-z0-9\-._~]*$/;
const UNRESERVED_PATH = /^[A-Za-z0-9\-._~/]*$/;

/** RFC 3986 escaping: the SDK's own (its serializer's and signer's), skipped where it would change nothing. */
const escapeUri = (text: string) => (UNRESERVED.test(text) ? text : sdkEscapeUri(text));

/** A key in a URL path, each segment escaped and slashes kept: the SDK's escapeUriPath, skipped where it would change nothing. */
export const escapeUriPath = (path: string) => (UNRESERVED_PATH.test(path) ? path : sdkEscapeUriPath(path));
