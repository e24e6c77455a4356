/**
 * The bulk upload path of a publish: PutObject of a small public object (a profile, an error
 * document) without the SDK's per-command middleware stack. A cold publish of a million users sends
 * 1.76M of them, and the stack (endpoint rules, schema serde, user agent, checksum and retry
 * middleware, a handler chain resolved per send) costs several times the signing itself: on a
 * publisher's single core it, not the bucket's latency, bounded the cold publish
 * (scripts/bench-put-path.mjs measures both paths).
 *
 * Everything that decides what goes on the wire is still the SDK's, taken from the client itself,
 * but the signature's arithmetic:
 *   - the URL: the client's endpoint rules for the bucket (path-style or virtual-hosted, exactly as
 *     S3Client decides), and the key escaped as its serializer escapes it;
 *   - the signature's inputs: the client's credentials provider (refreshed as it refreshes them), its
 *     signing region and name for the bucket, and its clock-skew correction. The signature itself is
 *     computed by sigv4.ts, as the SDK's SignatureV4 computes it (tested against it), without the
 *     signer's per-request overhead;
 *   - the retries: the client's retry strategy (AWS_MAX_ATTEMPTS, backoff, jitter, retry quota),
 *     with errors classified by the SDK's own rules (throttling, transient, server);
 *   - the HTTP handler: Remote's CountingHandler, so the fence runs right before every attempt and
 *     every request is counted.
 * What is done here: building the request, reading an S3 error answer into an error shaped like the
 * SDK's (name = S3's code, `$metadata`), so that Remote.failure explains it as before.
 * test/publish/fast-put.test.ts proves the requests are signed byte for byte as the SDK signs them.
 *
 * Objects the tool reads back or writes conditionally (the record, the leases) and multipart uploads
 * keep going through the SDK (objects.ts, upload.ts): their few requests cost nothing that matters.
 */
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getEndpointFromInstructions } from '@smithy/core/endpoints';
import { getRetryAfterHint, isServerError, isThrottlingError, isTransientError } from '@smithy/core/retry';
import { HttpRequest } from '@smithy/core/transport';
import { escapeUriPath, PutSigner, type Credentials, type UnsignedRequest } from './sigv4.js';

/** What of Remote (client.ts) this path uses: its client, its retry count, its way of explaining failures. */
export interface PutChannel {
  readonly client: S3Client;
  readonly options: { readonly bucket: string };
  retries: number;
  failure(error: unknown, action: string): Error;
}

/** How the client sends a PutObject to this bucket: resolved once, from the client's own config. */
interface Route {
  protocol: string;
  hostname: string;
  port: number | undefined;
  /** The path before the key ('' for a virtual-hosted bucket, '/<bucket>' for a path-style one). */
  base: string;
  /** The Host header, as the SDK's host-header middleware sets it. */
  host: string;
  /** Signs for the bucket's signing region and name, as the client's signer would. */
  signer: PutSigner;
}

interface HttpAnswer {
  statusCode: number;
  headers: Record<string, string | undefined>;
  body: AsyncIterable<Buffer | string> & { resume(): void };
}

type SdkShapedError = Error & {
  code?: string;
  $metadata: { httpStatusCode?: number; attempts?: number; clockSkewCorrected?: boolean };
  $response?: HttpAnswer;
};

/** The client's config fields this path reads (they are there at runtime; the SDK's types hide some). */
interface ClientConfig {
  credentials: () => Promise<Credentials>;
  retryStrategy: () => Promise<RetryStrategy>;
  requestHandler: { handle(request: HttpRequest): Promise<{ response: HttpAnswer }> };
  systemClockOffset: number;
}

interface RetryToken {
  getRetryDelay(): number;
}
interface RetryStrategy {
  acquireInitialRetryToken(scope: string): Promise<RetryToken>;
  refreshRetryTokenForRetry(token: RetryToken, info: { error: unknown; errorType: string; retryAfterHint?: Date }): Promise<RetryToken>;
  recordSuccess(token: RetryToken): void;
}

export class FastPut {
  private route: Promise<Route> | undefined;

  constructor(private readonly remote: PutChannel) {}

  /**
   * PUTs `body` at `key` (the full object key) with `headers` (lower-case names); `action` names it in
   * errors. Returns the new object's ETag as the bucket gave it (quoted), or undefined when it gave none.
   */
  async put(key: string, body: Buffer, headers: Record<string, string>, action: string): Promise<string | undefined> {
    const config = this.remote.client.config as unknown as ClientConfig;
    const route = await (this.route ??= resolveRoute(this.remote, key));
    const request: UnsignedRequest = {
      method: 'PUT',
      path: `${route.base}/${escapeUriPath(key)}`,
      // The operation's name, as the SDK's serializer adds it (it is part of what is signed).
      query: { 'x-id': 'PutObject' },
      // As the SDK's host-header and content-length middleware set them.
      headers: {
        ...headers,
        'content-length': String(body.length),
        host: route.host,
      },
      body,
    };
    const strategy = await config.retryStrategy();
    let token = await strategy.acquireInitialRetryToken('');
    for (let attempt = 1; ; attempt++) {
      let error: SdkShapedError;
      try {
        const etag = await this.send(config, route, request);
        strategy.recordSuccess(token);
        this.remote.retries += attempt - 1;
        return etag;
      } catch (cause) {
        error = cause as SdkShapedError;
        error.$metadata = { ...error.$metadata, attempts: attempt };
      }
      try {
        token = await strategy.refreshRetryTokenForRetry(token, retryInfo(error));
      } catch {
        this.remote.retries += attempt - 1;
        throw this.remote.failure(error, action);
      }
      const delay = token.getRetryDelay();
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  /** One attempt: signed afresh (a new date), through the counting, fencing handler. */
  private async send(config: ClientConfig, route: Route, request: UnsignedRequest): Promise<string | undefined> {
    const credentials = await config.credentials();
    const headers = route.signer.sign(request, credentials, new Date(Date.now() + config.systemClockOffset));
    const signed = new HttpRequest({ ...request, protocol: route.protocol, hostname: route.hostname, port: route.port, headers });
    const sentAt = Date.now();
    const { response } = await config.requestHandler.handle(signed);
    const corrected = correctClock(config, response, sentAt);
    if (response.statusCode >= 200 && response.statusCode < 300) {
      response.body.resume();
      return response.headers['etag'];
    }
    const error = await s3Error(response);
    if (corrected) error.$metadata.clockSkewCorrected = true;
    throw error;
  }
}

/** The endpoint S3Client would send this bucket's PutObject to, and the region and name it would sign it for. */
async function resolveRoute(remote: PutChannel, key: string): Promise<Route> {
  const endpoint = await getEndpointFromInstructions(
    { Bucket: remote.options.bucket, Key: key },
    PutObjectCommand as never,
    remote.client.config as never,
  );
  const scheme = (
    endpoint.properties?.['authSchemes'] as { name?: string; signingRegion?: string; signingName?: string }[] | undefined
  )?.find((auth) => auth.name === 'sigv4');
  const url = endpoint.url;
  const region = await remote.client.config.region();
  const port = url.port === '' ? undefined : Number(url.port);
  return {
    protocol: url.protocol,
    hostname: url.hostname,
    port,
    base: url.pathname.replace(/\/+$/, ''),
    host: port === undefined ? url.hostname : `${url.hostname}:${port}`,
    signer: new PutSigner(scheme?.signingRegion ?? region, scheme?.signingName ?? 's3'),
  };
}

/** The SDK's retry classification (its retry middleware's), for its retry strategy to decide on. */
function retryInfo(error: SdkShapedError): { error: unknown; errorType: string; retryAfterHint?: Date } {
  const sdkError = error as never;
  const errorType = isThrottlingError(sdkError)
    ? 'THROTTLING'
    : isTransientError(sdkError)
      ? 'TRANSIENT'
      : isServerError(sdkError)
        ? 'SERVER_ERROR'
        : 'CLIENT_ERROR';
  const hint = error.$response === undefined ? undefined : getRetryAfterHint(error.$response as never);
  return hint === undefined ? { error, errorType } : { error, errorType, retryAfterHint: hint };
}

/**
 * The SDK's clock-skew correction: the server's Date sets the offset signatures are dated with; an
 * error answered after a large correction is retried (signed anew with the corrected clock).
 */
function correctClock(config: ClientConfig, response: HttpAnswer, sentAt: number): boolean {
  const date = response.headers['date'];
  if (date === undefined || response.headers['age'] !== undefined) return false;
  const server = Date.parse(date);
  const received = Date.now();
  if (Number.isNaN(server) || received - sentAt > 900_000) return false;
  const before = config.systemClockOffset;
  config.systemClockOffset = server - received;
  return Math.abs(config.systemClockOffset) >= 240_000 && config.systemClockOffset !== before;
}

/** An S3 error answer, shaped as the SDK shapes it: name = the XML's Code (or the status), $metadata. */
async function s3Error(response: HttpAnswer): Promise<SdkShapedError> {
  let xml = '';
  for await (const chunk of response.body) xml += String(chunk);
  const code = /<Code>([^<]*)<\/Code>/.exec(xml)?.[1] ?? (response.statusCode === 404 ? 'NotFound' : `Http${response.statusCode}`);
  const message = /<Message>([^<]*)<\/Message>/.exec(xml)?.[1] ?? `HTTP ${response.statusCode}`;
  return Object.assign(new Error(message), { name: code, $metadata: { httpStatusCode: response.statusCode }, $response: response });
}
