/**
 * The tool's own small objects under `<prefix>/.profile-snapshot/` (the record, the leases): read
 * with the ETag and age that conditional writes are decided on, and written only when the object is
 * still as the writer last saw it. S3, R2 and MinIO refuse such a write with 412 (or
 * 409 when two race), so two writers can never both believe they replaced the same version.
 */
import { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, type GetObjectCommandOutput } from '@aws-sdk/client-s3';
import { Remote } from './client.js';
import { objectKey } from './target.js';

export interface StoredObject {
  bytes: Uint8Array;
  etag: string;
  /** The server's Last-Modified, in ms (its clock). */
  modifiedMs: number | undefined;
}

/** Write only if the object is absent (`ifNoneMatch: '*'`) or still has the ETag `ifMatch`. */
export type WriteCondition = { ifMatch: string } | { ifNoneMatch: '*' } | undefined;

/** A condition as the SDK's PutObject and CompleteMultipartUpload take it. */
export const conditionInput = (condition: WriteCondition): { IfMatch?: string; IfNoneMatch?: string } =>
  condition === undefined ? {} : 'ifMatch' in condition ? { IfMatch: condition.ifMatch } : { IfNoneMatch: '*' };

/** The condition that a write over what was read must carry: nothing there, or the version read. */
export const unchangedSince = (etag: string | undefined): WriteCondition => (etag === undefined ? { ifNoneMatch: '*' } : { ifMatch: etag });

/**
 * The object, or undefined when there is none. `known` (an ETag) makes an unchanged object cost no
 * body: 'unchanged'. `firstBytes` reads only that many of its first bytes (all of it when it is
 * shorter, or when the server ignores the range).
 */
export async function readObject(
  remote: Remote,
  path: string,
  known?: string,
  firstBytes?: number,
): Promise<StoredObject | 'unchanged' | undefined> {
  const { bucket, prefix } = remote.options;
  const range = firstBytes === undefined ? undefined : `bytes=0-${firstBytes - 1}`;
  try {
    return await remote.call(async () => {
      const output = await remote.client.send(
        new GetObjectCommand({ Bucket: bucket, Key: objectKey(prefix, path), IfNoneMatch: known, Range: range }),
      );
      return {
        $metadata: output.$metadata,
        bytes: await bodyBytes(output.Body!, output.ContentLength),
        etag: output.ETag ?? '',
        modifiedMs: output.LastModified?.getTime(),
      };
    }, `read ${path} in the bucket`);
  } catch (error) {
    if (Remote.failedWith(error, 'NoSuchKey', 'NotFound')) return undefined;
    if (known !== undefined && statusOf(error) === 304) return 'unchanged';
    throw error;
  }
}

/**
 * A body's bytes, copied as they arrive into one buffer of the length the response gave: the state
 * is megabytes at a million profiles, and the SDK's collector holds every chunk and their join at
 * once. A body of no stated length, or not a Node stream, is left to the SDK. Every object this tool
 * reads back (its record, a piece of an object it joins) is read through here.
 */
export async function bodyBytes(body: StreamingBody, length: number | undefined): Promise<Uint8Array> {
  if (length === undefined || !(body instanceof Readable)) return body.transformToByteArray();
  const bytes = Buffer.allocUnsafe(length);
  let filled = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    if (filled + chunk.length > length) throw new Error(`the response's body is longer than its Content-Length (${length} bytes)`);
    bytes.set(chunk, filled);
    filled += chunk.length;
  }
  if (filled < length) throw new Error(`the response's body ended after ${filled} of its ${length} bytes`);
  return bytes;
}

export type StreamingBody = NonNullable<GetObjectCommandOutput['Body']>;

/** Writes a small object under `condition`; returns its new ETag, or 'refused' when the condition failed. */
export async function writeObject(
  remote: Remote,
  path: string,
  body: Buffer | string,
  contentType: string,
  condition: WriteCondition,
): Promise<string | 'refused'> {
  const { bucket, prefix } = remote.options;
  try {
    const output = await remote.call(
      () =>
        remote.client.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: objectKey(prefix, path),
            Body: body,
            ContentType: contentType,
            CacheControl: 'no-store',
            ...conditionInput(condition),
          }),
        ),
      `write ${path} in the bucket`,
    );
    return output.ETag ?? '';
  } catch (error) {
    if (condition !== undefined && (Remote.preconditionFailed(error) || ('ifMatch' in condition && Remote.failedWith(error, 'NoSuchKey'))))
      return 'refused';
    throw error;
  }
}

export async function deleteObject(remote: Remote, path: string): Promise<void> {
  const { bucket, prefix } = remote.options;
  await remote.call(() => remote.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: objectKey(prefix, path) })), `delete ${path}`);
}

function statusOf(error: unknown): number | undefined {
  const cause = (error as { cause?: { $metadata?: { httpStatusCode?: number } } }).cause;
  return cause?.$metadata?.httpStatusCode;
}
