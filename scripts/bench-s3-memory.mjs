/**
 * A fast, in-memory S3-compatible server for publish benchmarks at scale (bench-publish-1m.mjs): one
 * plain `node:http` process that is never the bottleneck of a publish. It implements exactly what
 * `profile-snapshot publish` sends (found by running publish against it with `--log`):
 *
 *   PutObject (If-None-Match: * and If-Match: <etag>, 412 when they fail, 404 for If-Match on a
 *   missing key), GetObject (If-None-Match -> 304, If-Match -> 412), HeadObject, ListObjectsV2
 *   (prefix, continuation-token, start-after, max-keys <= 1000, encoding-type=url, keys sorted),
 *   DeleteObjects (POST ?delete), DeleteObject, CreateMultipartUpload, UploadPart, UploadPartCopy
 *   (x-amz-copy-source with a range: the part keeps the source's bytes when it kept them, else only
 *   the range's length and a hash of where it came from), CompleteMultipartUpload (ETag
 *   md5-of-md5s-N; every part but the last at least 5 MiB, as S3 wants: EntityTooSmall),
 *   AbortMultipartUpload; GetObject with a Range on a kept body; HeadBucket and CreateBucket answer
 *   200. Any bucket name is accepted (path-style URLs). Every answer has a Date header.
 *
 * Memory: an index of key -> size, MD5 ETag, stored headers (Content-Type, Content-Encoding,
 * Cache-Control, shared between objects), last-modified. Bodies are hashed as they stream in and
 * thrown away, except for keys under `.profile-snapshot/` (the publisher's record and leases, which it
 * reads back; not a shard's list parts, `/parts/`, which are only ever copied) and keys matching
 * `--keep RE`. A GET of an object whose body was discarded answers 501 BodyDiscarded and is counted
 * (`bodylessGets` in the stats), so a benchmark notices.
 *
 * Latency: `--delay-ms N` holds every answer N ms after the request has been handled (a model of a
 * bucket's round trip). With `--proxy <port>` the process is instead a forwarding proxy in front of
 * another server, adding the delay there (to compare the two set-ups).
 *
 * Control (when forked with an IPC channel): messages {op: 'stats'}, {op: 'reset'},
 * {op: 'drop', prefix}, {op: 'seed', key, size, zeros?} (an object of that size, body discarded, without
 * sending it; read back as zeros with `zeros`) are answered with {op, ...}. Prints {"port": N} on stdout when listening.
 *
 *   node scripts/bench-s3-memory.mjs [--delay-ms 25] [--log FILE] [--keep RE] [--port 0] [--keep-alive-ms 120000]
 *   node scripts/bench-s3-memory.mjs --proxy <port> [--delay-ms 25]
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Agent, createServer, request as httpRequest } from 'node:http';

const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const DELAY_MS = Number(value('--delay-ms', '0'));
const PORT = Number(value('--port', '0'));
const LOG = value('--log', undefined);
const KEEP = value('--keep', undefined);
const PROXY_TO = value('--proxy', undefined);
/** How long an idle keep-alive connection is kept open (Node's own default is 5 s). */
const KEEP_ALIVE_MS = Number(value('--keep-alive-ms', '120000'));

const keepRe = KEEP === undefined ? undefined : new RegExp(KEEP);
const STATE_DIR_RE = /(^|\/)\.profile-snapshot\//;
const PARTS_RE = /(^|\/)\.profile-snapshot\/shards\/[^/]+\/parts\//;
const keepBody = (key) => (STATE_DIR_RE.test(key) && !PARTS_RE.test(key)) || (keepRe !== undefined && keepRe.test(key));
/** S3's least size of every part of a multipart upload but the last. */
const MIN_PART_BYTES = 5 * 2 ** 20;
const log = LOG === undefined ? undefined : createWriteStream(LOG, { flags: 'a' });

const later = DELAY_MS > 0 ? (fn) => setTimeout(fn, DELAY_MS) : (fn) => fn();

// ---------------------------------------------------------------------------------------------
// Proxy mode: forwards every request to the server behind it, answering DELAY_MS after it answered.
// ---------------------------------------------------------------------------------------------
if (PROXY_TO !== undefined) {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const proxy = createServer((req, res) => {
    const forward = httpRequest(
      { host: '127.0.0.1', port: Number(PROXY_TO), method: req.method, path: req.url, headers: req.headers, agent },
      (answer) => {
        const chunks = [];
        answer.on('data', (c) => chunks.push(c));
        answer.on('end', () =>
          later(() => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(Buffer.concat(chunks));
          }),
        );
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  proxy.keepAliveTimeout = 120_000;
  proxy.headersTimeout = 130_000;
  proxy.requestTimeout = 0;
  proxy.listen(PORT, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: proxy.address().port })}\n`));
  process.on('message', (message) => {
    if (message?.op === 'stats') process.send({ op: 'stats', cpu: process.cpuUsage(), rssMb: process.memoryUsage().rss / 2 ** 20 });
    else process.send({ op: message?.op });
  });
  process.on('disconnect', () => process.exit(0));
} else {
  startServer();
}

/** A `bytes=a-b` range (of a Range or x-amz-copy-source-range header) as [start, end); undefined when absent. */
function byteRange(header, size) {
  const match = /^bytes=(\d+)-(\d*)$/.exec(header ?? '');
  if (match === null) return undefined;
  const start = Number(match[1]);
  const end = match[2] === '' ? size : Math.min(size, Number(match[2]) + 1);
  return { start, end };
}

function startServer() {
  /** key -> { size, etag (hex, or hex-N), headers (shared object), modified (ms), body?: Buffer } */
  const objects = new Map();
  /** First path segment of a key -> sorted index (listing a prefix sorts only its own keys). */
  const indexes = new Map();
  const uploads = new Map();
  const headerSets = new Map();
  const stats = newStats();

  function newStats() {
    return { requests: {}, bytesIn: 0, bytesOut: 0, bodylessGets: 0, errors: {}, timeline: {}, notImplemented: [] };
  }

  function indexFor(key) {
    const slash = key.indexOf('/');
    const segment = slash === -1 ? '' : key.slice(0, slash);
    let index = indexes.get(segment);
    if (index === undefined) indexes.set(segment, (index = { sorted: [], added: [], removed: false }));
    return index;
  }

  /** The index's keys, sorted, live ones only (merging what was added since the last listing). */
  function sortedKeys(index) {
    if (index.added.length > 0) {
      const added = index.added.sort();
      index.added = [];
      const a = index.sorted;
      const merged = new Array(a.length + added.length);
      let i = 0,
        j = 0,
        n = 0;
      while (i < a.length || j < added.length) {
        const next = j >= added.length || (i < a.length && a[i] <= added[j]) ? a[i++] : added[j++];
        if (n === 0 || merged[n - 1] !== next) merged[n++] = next;
      }
      merged.length = n;
      index.sorted = merged;
    }
    if (index.removed) {
      index.sorted = index.sorted.filter((key) => objects.has(key));
      index.removed = false;
    }
    return index.sorted;
  }

  function setObject(key, entry) {
    if (!objects.has(key)) indexFor(key).added.push(key);
    objects.set(key, entry);
  }

  function deleteKey(key) {
    if (objects.delete(key)) indexFor(key).removed = true;
  }

  /** Stored headers of an object: one shared object per distinct combination. */
  function storedHeaders(req) {
    const type = req.headers['content-type'] ?? 'binary/octet-stream';
    const encoding = req.headers['content-encoding'];
    const cache = req.headers['cache-control'];
    const id = `${type}\n${encoding ?? ''}\n${cache ?? ''}`;
    let headers = headerSets.get(id);
    if (headers === undefined) {
      headers = { 'content-type': type };
      if (encoding !== undefined) headers['content-encoding'] = encoding;
      if (cache !== undefined) headers['cache-control'] = cache;
      headerSets.set(id, Object.freeze(headers));
    }
    return headers;
  }

  const xmlEscape = (s) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]);
  const xmlUnescape = (s) =>
    s.replace(/&(amp|lt|gt|quot|apos|#x[0-9a-fA-F]+|#[0-9]+);/g, (_, e) =>
      e === 'amp'
        ? '&'
        : e === 'lt'
          ? '<'
          : e === 'gt'
            ? '>'
            : e === 'quot'
              ? '"'
              : e === 'apos'
                ? "'"
                : String.fromCodePoint(e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10)),
    );
  const XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n';
  const unquote = (etag) => etag.trim().replace(/^W\//, '').replaceAll('"', '');
  const httpDate = (ms) => new Date(ms).toUTCString();
  const isoDate = (ms) => new Date(ms).toISOString();

  function count(kind, status) {
    stats.requests[kind] = (stats.requests[kind] ?? 0) + 1;
    const now = Date.now();
    const t = (stats.timeline[kind] ??= { first: now, last: now, n: 0 });
    t.last = now;
    t.n++;
    if (status >= 400) stats.errors[`${kind} ${status}`] = (stats.errors[`${kind} ${status}`] ?? 0) + 1;
  }

  /** A kind for the stats: object PUTs apart from the tool's record and leases. */
  function kindOf(op, key) {
    const m = /(?:^|\/)\.profile-snapshot\/(.+)$/.exec(key);
    return m ? `${op} .profile-snapshot/${m[1]}` : op;
  }

  function send(req, res, kind, status, headers, body) {
    count(kind, status);
    if (log) {
      const cond = [
        req.headers['if-match'] && `If-Match=${req.headers['if-match']}`,
        req.headers['if-none-match'] && `If-None-Match=${req.headers['if-none-match']}`,
      ]
        .filter(Boolean)
        .join(' ');
      log.write(`${new Date().toISOString()} ${req.method} ${req.url} -> ${status} ${kind}${cond ? ` ${cond}` : ''}\n`);
    }
    const length = body === undefined ? 0 : Buffer.byteLength(body);
    stats.bytesOut += req.method === 'HEAD' ? 0 : length;
    later(() => {
      res.writeHead(status, { 'x-amz-request-id': randomId(), 'content-length': String(length), ...headers });
      if (body === undefined || req.method === 'HEAD') res.end();
      else res.end(body);
    });
  }

  let requestCounter = 0;
  const randomId = () => (++requestCounter).toString(16).toUpperCase().padStart(16, '0');

  function error(req, res, kind, status, code, message, key) {
    const body =
      req.method === 'HEAD' || status === 304
        ? undefined
        : `${XML_HEAD}<Error><Code>${code}</Code><Message>${xmlEscape(message)}</Message>${key ? `<Key>${xmlEscape(key)}</Key>` : ''}<RequestId>${requestCounter}</RequestId></Error>`;
    send(req, res, kind, status, body === undefined ? {} : { 'content-type': 'application/xml' }, body);
  }

  /** Reads a request body: hashed as it streams; kept only when `keep`. */
  function readBody(req, keep, done) {
    const md5 = createHash('md5');
    const chunks = keep ? [] : undefined;
    let size = 0;
    req.on('data', (chunk) => {
      md5.update(chunk);
      size += chunk.length;
      chunks?.push(chunk);
    });
    req.on('end', () => {
      stats.bytesIn += size;
      done({ size, md5: md5.digest(), body: chunks === undefined ? undefined : Buffer.concat(chunks) });
    });
  }

  function readText(req, done) {
    readBody(req, true, ({ body }) => done(body.toString('utf8')));
  }

  /** 412/404 when a conditional write's condition fails; undefined when it may go on. */
  function writeRefusal(req, key) {
    const ifNoneMatch = req.headers['if-none-match'];
    const ifMatch = req.headers['if-match'];
    const current = objects.get(key);
    if (ifNoneMatch !== undefined) {
      if (ifNoneMatch.trim() === '*' ? current !== undefined : current !== undefined && unquote(ifNoneMatch) === current.etag)
        return [412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold'];
    }
    if (ifMatch !== undefined) {
      if (current === undefined) return [404, 'NoSuchKey', 'The specified key does not exist.'];
      if (ifMatch.trim() !== '*' && unquote(ifMatch) !== current.etag)
        return [412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold'];
    }
    return undefined;
  }

  function objectHeaders(entry) {
    return { etag: `"${entry.etag}"`, 'last-modified': httpDate(entry.modified), 'accept-ranges': 'bytes', ...entry.headers };
  }

  function putObject(req, res, key) {
    const kind = kindOf('PutObject', key);
    readBody(req, keepBody(key), ({ size, md5, body }) => {
      const refusal = writeRefusal(req, key);
      if (refusal) return error(req, res, kind, refusal[0], refusal[1], refusal[2], key);
      const entry = { size, etag: md5.toString('hex'), headers: storedHeaders(req), modified: Date.now(), body };
      setObject(key, entry);
      send(req, res, kind, 200, { etag: `"${entry.etag}"` });
    });
  }

  function getObject(req, res, key, head) {
    const kind = kindOf(head ? 'HeadObject' : 'GetObject', key);
    const entry = objects.get(key);
    if (entry === undefined) return error(req, res, kind, 404, head ? 'NotFound' : 'NoSuchKey', 'The specified key does not exist.', key);
    const ifMatch = req.headers['if-match'];
    if (ifMatch !== undefined && ifMatch.trim() !== '*' && unquote(ifMatch) !== entry.etag)
      return error(req, res, kind, 412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', key);
    const ifNoneMatch = req.headers['if-none-match'];
    if (ifNoneMatch !== undefined && (ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((e) => unquote(e) === entry.etag)))
      return send(req, res, kind, 304, { etag: `"${entry.etag}"`, 'last-modified': httpDate(entry.modified) });
    if (head) {
      count(kind, 200);
      return later(() => {
        res.writeHead(200, { 'x-amz-request-id': randomId(), ...objectHeaders(entry), 'content-length': String(entry.size) });
        res.end();
      });
    }
    if (entry.body === undefined && entry.zeros) {
      // A seeded object read as zeros, a range at a time (a join under R2's rules reads the windows between parts).
      const range = byteRange(req.headers.range, entry.size) ?? { start: 0, end: entry.size };
      const body = Buffer.alloc(range.end - range.start);
      stats.bytesOut += body.length;
      count(kind, 206);
      return later(() => {
        const ranged = { 'content-range': `bytes ${range.start}-${range.end - 1}/${entry.size}` };
        res.writeHead(206, { 'x-amz-request-id': randomId(), ...objectHeaders(entry), ...ranged, 'content-length': String(body.length) });
        res.end(body);
      });
    }
    if (entry.body === undefined) {
      stats.bodylessGets++;
      return error(req, res, kind, 501, 'BodyDiscarded', 'this benchmark server discarded the body of this object', key);
    }
    const range = byteRange(req.headers.range, entry.size);
    const body = range === undefined ? entry.body : entry.body.subarray(range.start, range.end);
    stats.bytesOut += body.length;
    count(kind, range === undefined ? 200 : 206);
    if (log) log.write(`${new Date().toISOString()} GET ${req.url} -> 200 ${kind}\n`);
    later(() => {
      const ranged = range === undefined ? {} : { 'content-range': `bytes ${range.start}-${range.end - 1}/${entry.size}` };
      res.writeHead(range === undefined ? 200 : 206, {
        'x-amz-request-id': randomId(),
        ...objectHeaders(entry),
        ...ranged,
        'content-length': String(body.length),
      });
      res.end(body);
    });
  }

  function listObjects(req, res, bucket, query) {
    const kind = 'ListObjectsV2';
    if (query.get('list-type') !== '2')
      return error(req, res, 'ListObjects(v1)', 501, 'NotImplemented', 'only ListObjectsV2 is implemented');
    const prefix = query.get('prefix') ?? '';
    const maxKeys = Math.min(1000, Math.max(0, Number(query.get('max-keys') ?? '1000')));
    const token = query.get('continuation-token');
    const startAfter = query.get('start-after') ?? '';
    const urlEncoding = query.get('encoding-type') === 'url';
    if (query.get('delimiter')) return error(req, res, kind, 501, 'NotImplemented', 'delimiter is not implemented');
    let after = startAfter;
    if (token) after = Buffer.from(token, 'base64url').toString('utf8');
    // The keys to look at: the index of the prefix's first segment, or every index for a prefix without one.
    const slash = prefix.indexOf('/');
    const keys =
      slash !== -1
        ? sortedKeys(indexes.get(prefix.slice(0, slash)) ?? { sorted: [], added: [], removed: false })
        : [...indexes.values()].flatMap((index) => sortedKeys(index)).sort();
    const from = after > prefix ? after : prefix;
    let lo = 0,
      hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (keys[mid] < from || (after !== '' && keys[mid] === after)) lo = mid + 1;
      else hi = mid;
    }
    const contents = [];
    let i = lo,
      last;
    for (; i < keys.length && contents.length < maxKeys; i++) {
      const key = keys[i];
      if (!key.startsWith(prefix)) break;
      if (after !== '' && key <= after) continue;
      const entry = objects.get(key);
      if (entry === undefined) continue;
      last = key;
      const shown = urlEncoding ? encodeURIComponent(key).replaceAll('%2F', '/') : xmlEscape(key);
      contents.push(
        `<Contents><Key>${shown}</Key><LastModified>${isoDate(entry.modified)}</LastModified><ETag>&quot;${entry.etag}&quot;</ETag><Size>${entry.size}</Size><StorageClass>STANDARD</StorageClass></Contents>`,
      );
    }
    // Truncated when another live key under the prefix follows.
    let truncated = false;
    for (; i < keys.length; i++) {
      if (!keys[i].startsWith(prefix)) break;
      if (objects.has(keys[i])) {
        truncated = true;
        break;
      }
    }
    const enc = (s) => (urlEncoding ? encodeURIComponent(s) : xmlEscape(s));
    const body =
      `${XML_HEAD}<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>${xmlEscape(bucket)}</Name><Prefix>${enc(prefix)}</Prefix>` +
      (token ? `<ContinuationToken>${xmlEscape(token)}</ContinuationToken>` : '') +
      (startAfter ? `<StartAfter>${enc(startAfter)}</StartAfter>` : '') +
      `<KeyCount>${contents.length}</KeyCount><MaxKeys>${maxKeys}</MaxKeys>` +
      (urlEncoding ? '<EncodingType>url</EncodingType>' : '') +
      `<IsTruncated>${truncated}</IsTruncated>` +
      (truncated ? `<NextContinuationToken>${Buffer.from(last ?? after, 'utf8').toString('base64url')}</NextContinuationToken>` : '') +
      `${contents.join('')}</ListBucketResult>`;
    send(req, res, kind, 200, { 'content-type': 'application/xml' }, body);
  }

  function deleteObjects(req, res) {
    readText(req, (xml) => {
      const quiet = /<Quiet>\s*true\s*<\/Quiet>/i.test(xml);
      const keys = [...xml.matchAll(/<Key>([\s\S]*?)<\/Key>/g)].map((m) => xmlUnescape(m[1]));
      if (keys.length > 1000) return error(req, res, 'DeleteObjects', 400, 'MalformedXML', 'more than 1000 keys');
      for (const key of keys) deleteKey(key);
      stats.deletedKeys = (stats.deletedKeys ?? 0) + keys.length;
      const deleted = quiet ? '' : keys.map((key) => `<Deleted><Key>${xmlEscape(key)}</Key></Deleted>`).join('');
      send(
        req,
        res,
        'DeleteObjects',
        200,
        { 'content-type': 'application/xml' },
        `${XML_HEAD}<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${deleted}</DeleteResult>`,
      );
    });
  }

  function deleteObject(req, res, key) {
    req.resume();
    req.on('end', () => {
      deleteKey(key);
      send(req, res, kindOf('DeleteObject', key), 204, {});
    });
  }

  function createUpload(req, res, bucket, key) {
    req.resume();
    req.on('end', () => {
      const id = randomBytes(12).toString('base64url');
      uploads.set(id, { key, headers: storedHeaders(req), parts: new Map() });
      send(
        req,
        res,
        'CreateMultipartUpload',
        200,
        { 'content-type': 'application/xml' },
        `${XML_HEAD}<InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${xmlEscape(bucket)}</Bucket><Key>${xmlEscape(key)}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`,
      );
    });
  }

  function uploadPart(req, res, key, query) {
    const upload = uploads.get(query.get('uploadId'));
    if (upload === undefined || upload.key !== key) {
      req.resume();
      return error(req, res, 'UploadPart', 404, 'NoSuchUpload', 'The specified upload does not exist.', key);
    }
    const number = Number(query.get('partNumber'));
    readBody(req, keepBody(key), ({ size, md5, body }) => {
      upload.parts.set(number, { size, md5, body });
      send(req, res, 'UploadPart', 200, { etag: `"${md5.toString('hex')}"` });
    });
  }

  /** UploadPartCopy: a range of an object as a part, by reference to what is stored. */
  function copyPart(req, res, bucket, key, query) {
    req.resume();
    req.on('end', () => {
      const upload = uploads.get(query.get('uploadId'));
      if (upload === undefined || upload.key !== key)
        return error(req, res, 'UploadPartCopy', 404, 'NoSuchUpload', 'The specified upload does not exist.', key);
      const source = decodeURIComponent(req.headers['x-amz-copy-source']).replace(/^\//, '');
      const sourceKey = source.slice(source.indexOf('/') + 1);
      const entry = objects.get(sourceKey);
      if (entry === undefined) return error(req, res, 'UploadPartCopy', 404, 'NoSuchKey', 'The specified key does not exist.', sourceKey);
      const ifMatch = req.headers['x-amz-copy-source-if-match'];
      if (ifMatch !== undefined && unquote(ifMatch) !== entry.etag)
        return error(
          req,
          res,
          'UploadPartCopy',
          412,
          'PreconditionFailed',
          'At least one of the pre-conditions you specified did not hold',
          key,
        );
      const range = byteRange(req.headers['x-amz-copy-source-range'], entry.size) ?? { start: 0, end: entry.size };
      const body = entry.body?.subarray(range.start, range.end);
      const md5 = createHash('md5')
        .update(body ?? `${sourceKey}\t${entry.etag}\t${range.start}\t${range.end}`)
        .digest();
      upload.parts.set(Number(query.get('partNumber')), { size: range.end - range.start, md5, body: keepBody(key) ? body : undefined });
      send(
        req,
        res,
        'UploadPartCopy',
        200,
        { 'content-type': 'application/xml' },
        `${XML_HEAD}<CopyPartResult><ETag>&quot;${md5.toString('hex')}&quot;</ETag><LastModified>${new Date().toISOString()}</LastModified></CopyPartResult>`,
      );
    });
  }

  function completeUpload(req, res, bucket, key, query) {
    const id = query.get('uploadId');
    readText(req, (xml) => {
      const upload = uploads.get(id);
      if (upload === undefined || upload.key !== key)
        return error(req, res, 'CompleteMultipartUpload', 404, 'NoSuchUpload', 'The specified upload does not exist.', key);
      const listed = [...xml.matchAll(/<Part>([\s\S]*?)<\/Part>/g)].map((m) => ({
        number: Number(/<PartNumber>\s*(\d+)\s*<\/PartNumber>/.exec(m[1])?.[1]),
        etag: unquote(xmlUnescape(/<ETag>([\s\S]*?)<\/ETag>/.exec(m[1])?.[1] ?? '')),
      }));
      const whole = createHash('md5');
      let size = 0;
      const bodies = [];
      for (const [at, { number, etag }] of listed.entries()) {
        const part = upload.parts.get(number);
        if (part === undefined || part.md5.toString('hex') !== etag)
          return error(req, res, 'CompleteMultipartUpload', 400, 'InvalidPart', `part ${number} is missing or has another ETag`, key);
        if (at < listed.length - 1 && part.size < MIN_PART_BYTES)
          return error(req, res, 'CompleteMultipartUpload', 400, 'EntityTooSmall', `part ${number} is smaller than the minimum`, key);
        whole.update(part.md5);
        size += part.size;
        if (part.body) bodies.push(part.body);
      }
      const refusal = writeRefusal(req, key);
      if (refusal) return error(req, res, 'CompleteMultipartUpload', refusal[0], refusal[1], refusal[2], key);
      uploads.delete(id);
      const etag = `${whole.digest('hex')}-${listed.length}`;
      setObject(key, {
        size,
        etag,
        headers: upload.headers,
        modified: Date.now(),
        body: keepBody(key) ? Buffer.concat(bodies) : undefined,
      });
      send(
        req,
        res,
        'CompleteMultipartUpload',
        200,
        { 'content-type': 'application/xml' },
        `${XML_HEAD}<CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Location>/${xmlEscape(bucket)}/${xmlEscape(key)}</Location><Bucket>${xmlEscape(bucket)}</Bucket><Key>${xmlEscape(key)}</Key><ETag>&quot;${etag}&quot;</ETag></CompleteMultipartUploadResult>`,
      );
    });
  }

  function abortUpload(req, res, key, query) {
    req.resume();
    req.on('end', () => {
      uploads.delete(query.get('uploadId'));
      send(req, res, 'AbortMultipartUpload', 204, {});
    });
  }

  function notImplemented(req, res, what) {
    req.resume();
    if (stats.notImplemented.length < 20) stats.notImplemented.push(`${req.method} ${req.url}`);
    req.on('end', () =>
      error(req, res, `NotImplemented ${what}`, 501, 'NotImplemented', `${what} is not implemented by this benchmark server`),
    );
  }

  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const query = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
    const slash = path.indexOf('/', 1);
    const bucket = decodeURIComponent(slash === -1 ? path.slice(1) : path.slice(1, slash));
    const key = slash === -1 ? '' : decodeURIComponent(path.slice(slash + 1));
    const m = req.method;
    if (bucket === '') return notImplemented(req, res, 'ListBuckets');
    if (key === '') {
      if (
        m === 'GET' &&
        (query.has('list-type') || [...query.keys()].every((k) => ['prefix', 'max-keys', 'x-id', 'encoding-type'].includes(k)))
      )
        return (req.resume(), listObjects(req, res, bucket, query));
      if (m === 'POST' && query.has('delete')) return deleteObjects(req, res);
      if (m === 'HEAD' || m === 'PUT')
        return (req.resume(), req.on('end', () => send(req, res, m === 'HEAD' ? 'HeadBucket' : 'CreateBucket', 200, {})));
      return notImplemented(req, res, `${m} on the bucket (${[...query.keys()].join(',')})`);
    }
    if (m === 'PUT') {
      if (req.headers['x-amz-copy-source'] && query.has('uploadId')) return copyPart(req, res, bucket, key, query);
      if (req.headers['x-amz-copy-source']) return notImplemented(req, res, 'CopyObject');
      if (query.has('uploadId')) return uploadPart(req, res, key, query);
      return putObject(req, res, key);
    }
    if (m === 'GET' || m === 'HEAD') {
      if (query.has('uploadId') || query.has('tagging') || query.has('acl'))
        return notImplemented(req, res, `${m} ?${[...query.keys()].join(',')}`);
      req.resume();
      return getObject(req, res, key, m === 'HEAD');
    }
    if (m === 'POST' && query.has('uploads')) return createUpload(req, res, bucket, key);
    if (m === 'POST' && query.has('uploadId')) return completeUpload(req, res, bucket, key, query);
    if (m === 'DELETE' && query.has('uploadId')) return abortUpload(req, res, key, query);
    if (m === 'DELETE') return deleteObject(req, res, key);
    return notImplemented(req, res, `${m} ?${[...query.keys()].join(',')}`);
  });
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.headersTimeout = Math.max(KEEP_ALIVE_MS, 120_000) + 10_000;
  server.requestTimeout = 0;
  server.listen(PORT, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));

  process.on('message', (message) => {
    const op = message?.op;
    if (op === 'stats') {
      process.send({
        op,
        stats,
        objects: objects.size,
        uploads: uploads.size,
        cpu: process.cpuUsage(),
        rssMb: process.memoryUsage().rss / 2 ** 20,
      });
    } else if (op === 'seed') {
      // An object as a benchmark needs it in place (a part of a list of 10M users), without sending it.
      const etag = createHash('md5').update(`${message.key}\t${message.size}`).digest('hex');
      const zeros = Boolean(message.zeros);
      setObject(message.key, {
        size: message.size,
        etag,
        headers: storedHeaders({ headers: {} }),
        modified: Date.now(),
        body: undefined,
        zeros,
      });
      process.send({ op, etag });
    } else if (op === 'reset') {
      Object.assign(stats, newStats());
      process.send({ op });
    } else if (op === 'drop') {
      let dropped = 0;
      for (const key of objects.keys()) {
        if (!key.startsWith(message.prefix)) continue;
        objects.delete(key);
        dropped++;
      }
      for (const index of indexes.values()) index.removed = true;
      for (const [segment, index] of indexes) if (sortedKeys(index).length === 0) indexes.delete(segment);
      process.send({ op, dropped });
    } else if (op === 'keys') {
      const keys = [];
      for (const [key, entry] of objects) if (key.startsWith(message.prefix ?? '')) keys.push([key, entry.size, entry.etag, entry.headers]);
      process.send({ op, keys: keys.slice(0, message.limit ?? 100), total: keys.length });
    } else process.send({ op });
  });
  process.on('disconnect', () => process.exit(0));
}
