/**
 * Where a snapshot is published: an S3 bucket and an optional key prefix (`s3://bucket/prefix`), and
 * how to reach it. Object keys mirror the out dir: `<prefix>/<path relative to the out dir>`.
 */
import { usageError } from '../../core/errors.js';

export interface RemoteTarget {
  bucket: string;
  /** Key prefix without leading or trailing slash; '' for the bucket's root. */
  prefix: string;
  /** An S3-compatible endpoint (MinIO, R2, moto...); undefined for AWS S3 itself. */
  endpoint?: string | undefined;
  /** Undefined: the SDK's own chain (AWS_REGION, the profile's config). */
  region?: string | undefined;
  /** Path-style URLs (`endpoint/bucket/key`), as MinIO-like servers want. */
  pathStyle?: boolean;
}

/** Bucket names as S3 allows them (3-63 of a-z 0-9 . -), loosely: the server has the last word. */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Parses `s3://<bucket>[/<prefix>]`; `source` names where it came from, for the error. */
export function parseTarget(url: string, source: string): Pick<RemoteTarget, 'bucket' | 'prefix'> {
  const match = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(url.trim());
  const fix = 'give it as s3://<bucket> or s3://<bucket>/<prefix>, e.g. s3://profiles/api-snapshot';
  if (!match) throw usageError(`${source} must be an s3:// URL, got ${JSON.stringify(url)}`, fix);
  const bucket = match[1]!;
  if (!BUCKET.test(bucket)) throw usageError(`${source}: ${JSON.stringify(bucket)} is not a valid bucket name (3-63 of a-z 0-9 . -)`, fix);
  const prefix = (match[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (prefix.split('/').some((part) => part === '.' || part === '..' || (prefix !== '' && part === ''))) {
    throw usageError(`${source}: the prefix ${JSON.stringify(prefix)} has an empty, "." or ".." segment`, fix);
  }
  return { bucket, prefix };
}

/** The object key of a path relative to the out dir. */
export function objectKey(prefix: string, path: string): string {
  return prefix === '' ? path : `${prefix}/${path}`;
}

/** The endpoint as shown in messages: credentials in its URL (user:password@) are never printed. */
export function describeEndpoint(endpoint: string | undefined, region: string | undefined): string {
  if (endpoint === undefined) return `AWS S3${region ? ` (${region})` : ''}`;
  try {
    const url = new URL(endpoint);
    url.username = '';
    url.password = '';
    return url.toString().replace(/\/$/, '');
  } catch {
    return '(an endpoint that is not a URL)';
  }
}

/** `s3://bucket/prefix` for messages. */
export function describeTarget(target: Pick<RemoteTarget, 'bucket' | 'prefix'>): string {
  return `s3://${target.bucket}${target.prefix === '' ? '' : `/${target.prefix}`}`;
}

/** `s3://bucket/prefix at <endpoint>`: where a publish goes, as every message and status names it. */
export function describeRemote(target: RemoteTarget): string {
  return `${describeTarget(target)} at ${describeEndpoint(target.endpoint, target.region)}`;
}
