/**
 * The S3 client a publish talks through: the AWS SDK's own (credential chain, signing, retries with
 * backoff and jitter), set up for S3-compatible servers, counting every HTTP request it sends, and
 * turning the SDK's failures into one typed error (exit 6) that names endpoint, bucket and cause.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import { remoteError, SnapshotError, usageError } from '../../core/errors.js';
import { FastPut } from './fast-put.js';
import { CHECKSUMS } from './stores.js';
import { describeRemote, type RemoteTarget } from './target.js';

/** HTTP requests sent, by kind (retries included): what a publish cost. */
export interface RequestCounts {
  GET: number;
  HEAD: number;
  PUT: number;
  POST: number;
  DELETE: number;
  /** GETs that list the bucket (ListObjectsV2), counted apart from GET. */
  LIST: number;
}

export interface RemoteOptions extends RemoteTarget {
  /** Requests in flight at once. */
  concurrency: number;
  /** Attempts per request (the first included) before giving up: throttling, 5xx, dropped connections. */
  maxAttempts?: number | undefined;
  /** Files larger than this go up in parts of `multipartPartBytes` (tests lower both; see upload.ts). */
  multipartThresholdBytes?: number | undefined;
  multipartPartBytes?: number | undefined;
  /**
   * Multipart copies in parts of one size but the last (R2's rule); undefined: as the store table
   * says for the endpoint (stores.ts).
   */
  equalParts?: boolean | undefined;
}

export const DEFAULT_MAX_ATTEMPTS = 6;

/**
 * A pooled connection idle longer than this is closed, never reused. Servers close an idle keep-alive
 * connection after a timeout of their own (Node's default is 5 s), and a request written into a
 * connection the server has just closed fails with ECONNRESET. A watcher's build holds the event
 * loop for seconds while a publish is under way: every pooled connection then goes stale at once,
 * and their resets used up the SDK's retry quota.
 */
export const MAX_SOCKET_IDLE_MS = 4_000;
/** How often the pools are swept for such connections: often enough to stay below the servers' timeouts. */
const IDLE_SWEEP_MS = 500;

/**
 * The SDK's HTTP handler, counting each request it sends, and checking the fence (see Remote.fence)
 * right before: after it, nothing asynchronous stands between a request and its socket (the agent
 * has no limit to queue behind; the pools bound what is in flight).
 */
class CountingHandler extends NodeHttpHandler {
  /** When each pooled connection last went idle. */
  private readonly idleSince = new WeakMap<Socket, number>();
  private sweptAt = 0;

  constructor(
    options: ConstructorParameters<typeof NodeHttpHandler>[0],
    private readonly counts: RequestCounts,
    private readonly fence: () => void,
    private readonly agents: readonly (HttpAgent | HttpsAgent)[],
  ) {
    super(options);
    for (const agent of agents) agent.on('free', (socket: Socket) => this.idleSince.set(socket, Date.now()));
  }

  override handle(request: Parameters<NodeHttpHandler['handle']>[0], options?: Parameters<NodeHttpHandler['handle']>[1]) {
    this.fence();
    this.closeIdleSockets();
    const list = request.method === 'GET' && request.query?.['list-type'] !== undefined;
    const kind = list ? 'LIST' : (request.method as keyof RequestCounts);
    if (kind in this.counts) this.counts[kind]++;
    return super.handle(request, options);
  }

  /**
   * Closes pooled connections idle longer than MAX_SOCKET_IDLE_MS before the agent may pick one. The
   * agents' own idle timers do it while the event loop is free; this covers a loop held by a build.
   */
  private closeIdleSockets(): void {
    const now = Date.now();
    if (now - this.sweptAt < IDLE_SWEEP_MS) return;
    this.sweptAt = now;
    for (const agent of this.agents)
      for (const sockets of Object.values(agent.freeSockets))
        for (const socket of sockets ?? []) if ((this.idleSince.get(socket) ?? 0) < now - MAX_SOCKET_IDLE_MS) socket.destroy();
  }
}

export class Remote {
  readonly client: S3Client;
  readonly counts: RequestCounts = { GET: 0, HEAD: 0, PUT: 0, POST: 0, DELETE: 0, LIST: 0 };
  /** Requests sent again after a failure (throttling, 5xx, a dropped connection). */
  retries = 0;
  readonly where: string;
  /** PutObject of the bulk of small objects without the SDK's middleware stack (fast-put.ts). */
  readonly fastPut: FastPut;
  /**
   * Checked right before every attempt of every request is sent (the part uploads and the
   * SDK's retries included): a publisher whose lease ran out must not write another byte (lease/lease.ts).
   */
  fence: (() => void) | undefined;
  /**
   * The part buffers of its multipart uploads (upload.ts), reused by each large object it sends (the
   * list, then its variant): asked anew per object, the last one's were still waiting for a
   * collection. Let go of once a publish's uploads are done (publish.ts), and when it closes: a
   * watcher's publish thread would otherwise keep them through the cycles until its next publish, for
   * as long as anything still references the client.
   */
  readonly partBuffers: Buffer[] = [];
  /** The server's clock minus ours, from the Date header of its last answer: lease ages are read on it. */
  private serverOffsetMs: number | undefined;

  constructor(
    readonly options: RemoteOptions,
    readonly region: string,
  ) {
    // No socket limit: a request queued in the agent would have passed the fence long before it is
    // sent. The upload and delete pools bound the requests in flight to about --concurrency.
    // `timeout` closes a connection idle that long (see MAX_SOCKET_IDLE_MS).
    const sockets = { keepAlive: true, maxSockets: Infinity, timeout: MAX_SOCKET_IDLE_MS };
    const agents = [new HttpAgent(sockets), new HttpsAgent(sockets)] as const;
    this.client = new S3Client({
      region,
      ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
      forcePathStyle: Boolean(options.pathStyle),
      maxAttempts: options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      retryMode: 'standard',
      ...CHECKSUMS,
      requestHandler: new CountingHandler(
        {
          connectionTimeout: 10_000,
          requestTimeout: 120_000,
          httpAgent: agents[0],
          httpsAgent: agents[1],
        },
        this.counts,
        () => this.fence?.(),
        agents,
      ),
    });
    this.where = describeRemote({ ...options, region });
    this.fastPut = new FastPut(this);
    this.client.middlewareStack.add(
      (next) => async (args) => {
        const result = await next(args);
        const date = Date.parse((result.response as { headers?: Record<string, string> }).headers?.date ?? '');
        if (!Number.isNaN(date)) this.serverOffsetMs = date - Date.now();
        return result;
      },
      { step: 'deserialize', priority: 'low', name: 'profileSnapshotServerClock' },
    );
  }

  /** The server's time now, as its last Date header tells it (undefined before any answer with one). */
  serverNow(): number | undefined {
    return this.serverOffsetMs === undefined ? undefined : Date.now() + this.serverOffsetMs;
  }

  /** Resolves the region (flag, then the SDK's chain; an endpoint of our own may go without one). */
  static async open(options: RemoteOptions): Promise<Remote> {
    let region = options.region;
    if (region === undefined) {
      const probe = new S3Client({});
      try {
        region = await probe.config.region();
      } catch {
        region = undefined;
      } finally {
        probe.destroy();
      }
    }
    if (!region) {
      // S3-compatible servers (MinIO, R2, moto) accept any region; AWS itself needs the right one.
      if (options.endpoint === undefined)
        throw usageError('no AWS region for the bucket', 'pass --region, or set AWS_REGION or a region in your AWS profile');
      region = 'us-east-1';
    }
    return new Remote(options, region);
  }

  /**
   * Runs one SDK call (`() => remote.client.send(...)`), counting its retries; any failure becomes a
   * remote error naming `action`.
   */
  async call<T extends { $metadata?: { attempts?: number } }>(send: () => Promise<T>, action: string): Promise<T> {
    try {
      const output = await send();
      this.retries += Math.max(0, (output.$metadata?.attempts ?? 1) - 1);
      return output;
    } catch (error) {
      this.retries += Math.max(0, ((error as { $metadata?: { attempts?: number } }).$metadata?.attempts ?? 1) - 1);
      throw this.failure(error, action);
    }
  }

  /** Whether `error` (as `call` throws it) is the server's answer `names`, e.g. NoSuchKey. */
  static failedWith(error: unknown, ...names: string[]): boolean {
    const cause = error instanceof SnapshotError ? error.cause : error;
    return names.includes((cause as { name?: string } | undefined)?.name ?? '');
  }

  /** Whether a conditional write was refused: the object is not as the writer believed (412), or another conditional write raced it (409). */
  static preconditionFailed(error: unknown): boolean {
    const cause = (error instanceof SnapshotError ? error.cause : error) as { $metadata?: { httpStatusCode?: number } } | undefined;
    const status = cause?.$metadata?.httpStatusCode;
    return Remote.failedWith(error, 'PreconditionFailed', 'ConditionalRequestConflict') || status === 412 || status === 409;
  }

  /**
   * Whether a failed request (as `call` throws it) may pass when sent again later: the network, a
   * timeout, throttling or a 5xx, after the SDK's own attempts. Never a lost lease, a refusal or
   * anything of the tree's.
   */
  static transient(error: unknown): boolean {
    if (!(error instanceof SnapshotError) || error.kind !== 'remote' || error.cause === undefined) return false;
    return transientCause(error.cause);
  }

  /** A failure of `action` as a typed error (exit 6), unless it is one already. */
  failure(error: unknown, action: string): SnapshotError {
    if (error instanceof SnapshotError) return error;
    const { reason, hint } = explain(error);
    return remoteError(`cannot ${action} (${this.where}): ${reason}`, hint, error);
  }

  /** Drops the spare part buffers (a publish's last multipart upload is done); returns their bytes. */
  letGoOfPartBuffers(): number {
    const bytes = this.partBuffers.reduce((sum, buffer) => sum + buffer.length, 0);
    this.partBuffers.length = 0;
    return bytes;
  }

  close(): void {
    this.letGoOfPartBuffers();
    this.client.destroy();
  }
}

/** What went wrong, in words, and how to fix it. Never the request's headers or credentials. */
export function explain(error: unknown): { reason: string; hint: string } {
  const e = error as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number; attempts?: number } };
  const status = e.$metadata?.httpStatusCode;
  const attempts = e.$metadata?.attempts;
  const tried = attempts !== undefined && attempts > 1 ? ` after ${attempts} attempts` : '';
  const name = e.name ?? '';
  if (name === 'NoSuchBucket')
    return { reason: 'the bucket does not exist', hint: 'create the bucket, or fix the bucket name in --to / PROFILE_PUBLISH_TO' };
  if (name === 'CredentialsProviderError' || (/credential/i.test(e.message ?? '') && status === undefined)) {
    return { reason: 'no AWS credentials found', hint: 'set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE' };
  }
  if (status === 403 || ['AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'ExpiredToken', 'InvalidToken'].includes(name)) {
    return {
      reason: `access denied (${name || status})`,
      hint: 'check the credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE) and that they may read, write and delete objects in the bucket',
    };
  }
  const network = networkCode(e);
  if (network !== undefined || name === 'TimeoutError' || name === 'RequestTimeout') {
    return {
      reason: `the endpoint did not answer (${network ?? name})${tried}`,
      hint: 'check --endpoint (or AWS_ENDPOINT_URL_S3) and the network; the next publish retries',
    };
  }
  if (status !== undefined && (status >= 500 || status === 429 || name === 'SlowDown')) {
    return {
      reason: `the server kept failing (HTTP ${status}${name ? ` ${name}` : ''})${tried}`,
      hint: 'the store is throttling or failing; the next publish retries, and uploads only what is still missing',
    };
  }
  return {
    reason: `${name || 'error'}${status ? ` (HTTP ${status})` : ''}: ${e.message ?? String(error)}`,
    hint: 'check the bucket, the endpoint and the credentials',
  };
}

type SdkFailure = { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } };

/** The network failure's code (ECONNRESET, ...), when the request never got an answer. */
const networkCode = (e: SdkFailure): string | undefined =>
  e.code ?? /(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|EPIPE|socket hang up)/.exec(e.message ?? '')?.[1];

function transientCause(cause: unknown): boolean {
  const e = cause as SdkFailure;
  const status = e.$metadata?.httpStatusCode;
  if (status !== undefined) return status >= 500 || status === 429 || e.name === 'SlowDown';
  const code = networkCode(e);
  return (code !== undefined && DROPPED.test(code)) || e.name === 'TimeoutError' || e.name === 'RequestTimeout';
}

/** Network failures that a later attempt may not meet. */
const DROPPED = /^(ECONNREFUSED|ECONNRESET|ECONNABORTED|ETIMEDOUT|EPIPE|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|socket hang up)$/;
