/**
 * CloudFront in front of an S3 bucket, as aws/cloudformation.json configures it, over real HTTP:
 *   - the viewer-request function (the template's FunctionCode) runs as CloudFront runs it: in a
 *     fresh context with ES built-ins only (no require, process, Buffer, URL, fetch...), called as
 *     `handler(event)` with CloudFront's event shape (uri and query string as the viewer sent them,
 *     lower-case header names, `{ value, multiValue }`), within a small time budget and the 10 KB
 *     code limit; a generated response is sent as is (no policy or error page is trusted to mend it);
 *   - a request it passes on goes to the origin, a real S3-like server (s3rver) holding what the
 *     real `publish` wrote, under the template's origin path; the bucket policy's statements decide
 *     access (no s3:ListBucket, so a missing key is a 403, as on S3);
 *   - the custom error responses turn the origin's 403/404 into the page they name;
 *   - If-None-Match that matches the object's ETag is answered 304 from it;
 *   - the response headers policy adds its headers to every answer from the origin.
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import { Script, createContext } from 'node:vm';

interface Template {
  Resources: Record<string, { Type: string; Properties: any }>;
}

export interface CloudFrontSim {
  origin: string;
  /** Requests that reached the bucket, by key. */
  bucketKeys: string[];
  close(): Promise<void>;
}

export interface SimOptions {
  templatePath: string;
  /** s3rver's endpoint and the bucket `publish` wrote to. */
  s3: string;
  bucket: string;
  /** The template's Prefix parameter (publish's key prefix). */
  prefix: string;
  /** Offer the function `request.rawQueryString()`, as cloudfront-js-2.0 does (default true). */
  rawQueryString?: boolean;
}

const resource = (template: Template, type: string) => {
  const found = Object.values(template.Resources).find((r) => r.Type === type);
  if (!found) throw new Error(`the template has no ${type}`);
  return found.Properties;
};

/** The parsed query string of CloudFront's event: raw names and values, the first in `value`, all in `multiValue` when repeated. */
export function eventQuerystring(raw: string): Record<string, { value: string; multiValue?: { value: string }[] }> {
  const result: Record<string, { value: string; multiValue?: { value: string }[] }> = {};
  if (raw === '') return result;
  for (const part of raw.split('&')) {
    const eq = part.indexOf('=');
    const name = eq === -1 ? part : part.slice(0, eq);
    const value = eq === -1 ? '' : part.slice(eq + 1);
    const entry = result[name];
    if (entry === undefined) result[name] = { value };
    else entry.multiValue = [...(entry.multiValue ?? [{ value: entry.value }]), { value }];
  }
  return result;
}

/** The request of CloudFront's event: the path and query as sent, lower-case header names. */
export function eventRequest(method: string, target: string, headers: Record<string, { value: string }>, withRaw: boolean) {
  const q = target.indexOf('?');
  const raw = q === -1 ? undefined : target.slice(q + 1);
  const request = { method, uri: q === -1 ? target : target.slice(0, q), querystring: eventQuerystring(raw ?? ''), headers, cookies: {} };
  return withRaw ? { ...request, rawQueryString: () => raw } : request;
}

/** Loads the function's code the way CloudFront does: its own global scope, nothing of Node's. */
export function loadFunction(code: string): (event: unknown) => any {
  if (Buffer.byteLength(code) > 10 * 1024)
    throw new Error(`the function's code is ${Buffer.byteLength(code)} bytes; CloudFront allows 10 KB`);
  const script = new Script(code, { filename: 'viewer-request.js' });
  return (event) => {
    const context = createContext({ event });
    script.runInContext(context, { timeout: 100 });
    return new Script('handler(event)').runInContext(context, { timeout: 100 });
  };
}

/** The bucket policy's verdict for CloudFront reading `key` (explicit deny wins; no allow is a deny). */
function allowedByPolicy(policy: any, key: string, bucket: string, prefix: string): boolean {
  const resources = (statement: any): string[] => {
    const value = statement.Resource['Fn::If'] ? statement.Resource['Fn::If'][prefix === '' ? 2 : 1]['Fn::Sub'] : statement.Resource;
    return [String(value).replaceAll('${Bucket}', bucket).replaceAll('${Prefix}', prefix)];
  };
  const matches = (statement: any) =>
    statement.Action === 's3:GetObject' &&
    resources(statement).some((pattern) => {
      const re = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*')}$`);
      return re.test(`arn:aws:s3:::${bucket}/${key}`);
    });
  const statements = policy.PolicyDocument.Statement as any[];
  if (statements.some((s) => s.Effect === 'Deny' && matches(s))) return false;
  return statements.some((s) => s.Effect === 'Allow' && matches(s));
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export async function startCloudFrontSim(options: SimOptions): Promise<CloudFrontSim> {
  const template = JSON.parse(readFileSync(options.templatePath, 'utf8')) as Template;
  const fn = resource(template, 'AWS::CloudFront::Function');
  if (fn.FunctionConfig.Runtime !== 'cloudfront-js-2.0') throw new Error(`unexpected runtime ${fn.FunctionConfig.Runtime}`);
  const run = loadFunction(fn.FunctionCode);
  const config = resource(template, 'AWS::CloudFront::Distribution').DistributionConfig;
  const behavior = config.DefaultCacheBehavior;
  if (behavior.FunctionAssociations[0].EventType !== 'viewer-request') throw new Error('the function is not on viewer request');
  const policy = resource(template, 'AWS::CloudFront::ResponseHeadersPolicy').ResponseHeadersPolicyConfig;
  const bucketPolicy = resource(template, 'AWS::S3::BucketPolicy');
  const originPath = options.prefix === '' ? '' : `/${options.prefix}`;
  const bucketKeys: string[] = [];

  /** S3 GetObject (or HeadObject) through the bucket policy: a key CloudFront may not read, or that is missing, is 403. */
  const fromBucket = async (method: string, uri: string): Promise<Answer> => {
    const key = `${originPath}${uri}`.slice(1);
    bucketKeys.push(key);
    if (!allowedByPolicy(bucketPolicy, key, options.bucket, options.prefix))
      return { status: 403, headers: { 'content-type': 'application/xml' }, body: Buffer.from('<Error><Code>AccessDenied</Code></Error>') };
    // Raw HTTP, not fetch: the stored bytes and their Content-Encoding as they are (fetch would decode gzip).
    const response = await rawRequest(method, `${options.s3}/${options.bucket}/${key.split('/').map(encodeURIComponent).join('/')}`);
    if (response.status === 404)
      return { status: 403, headers: { 'content-type': 'application/xml' }, body: Buffer.from('<Error><Code>AccessDenied</Code></Error>') };
    const headers: Record<string, string> = {};
    for (const name of ['content-type', 'content-encoding', 'content-length', 'cache-control', 'etag', 'last-modified']) {
      const value = response.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    return { status: response.status, headers, body: response.body };
  };

  /** The origin's answer after custom error responses and conditional requests. */
  const throughCache = async (method: string, uri: string, ifNoneMatch: string | undefined): Promise<Answer> => {
    const answer = await fromBucket(method, uri);
    const custom = (config.CustomErrorResponses as any[]).find((e) => e.ErrorCode === answer.status);
    if (custom) {
      const page = await fromBucket('GET', custom.ResponsePagePath);
      return { ...page, status: custom.ResponseCode };
    }
    if (answer.status === 200 && ifNoneMatch !== undefined && ifNoneMatch === answer.headers.etag)
      return { ...answer, status: 304, body: Buffer.alloc(0) };
    return answer;
  };

  const withPolicy = (answer: Answer): Answer => {
    const headers = { ...answer.headers };
    for (const item of policy.CustomHeadersConfig.Items)
      if (item.Override || headers[item.Header.toLowerCase()] === undefined) headers[item.Header.toLowerCase()] = item.Value;
    if (policy.SecurityHeadersConfig?.ContentTypeOptions) headers['x-content-type-options'] = 'nosniff';
    return { ...answer, headers };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const target = req.url ?? '/';
    const method = req.method ?? 'GET';
    if (!behavior.AllowedMethods.includes(method)) {
      res.writeHead(403, { 'content-type': 'text/html' }).end('method not allowed by the distribution');
      return;
    }
    const headers: Record<string, { value: string }> = {};
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers[name.toLowerCase()] = { value };
    const event = {
      version: '1.0',
      context: { eventType: 'viewer-request', distributionId: 'ESIMULATED' },
      viewer: { ip: '127.0.0.1' },
      request: eventRequest(method, target, headers, options.rawQueryString ?? true),
    };
    const result = run(event);
    if (typeof result.statusCode === 'number') {
      const out: Record<string, string> = {};
      for (const [name, value] of Object.entries(result.headers ?? {})) out[name] = (value as { value: string }).value;
      const body = result.body === undefined ? '' : typeof result.body === 'string' ? result.body : result.body.data;
      res.writeHead(result.statusCode, out).end(method === 'HEAD' ? undefined : body);
      return;
    }
    if (result.method !== method || typeof result.uri !== 'string' || !result.uri.startsWith('/'))
      throw new Error(`the function returned an invalid request: ${JSON.stringify(result)}`);
    const answer = withPolicy(await throughCache(method, result.uri, result.headers['if-none-match']?.value));
    res.writeHead(answer.status, answer.headers).end(method === 'HEAD' || answer.status === 304 ? undefined : answer.body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: Error) => res.writeHead(502, { 'content-type': 'text/plain' }).end(`simulator: ${error.message}`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return {
    origin: `http://127.0.0.1:${address.port}`,
    bucketKeys,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function rawRequest(method: string, url: string): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
