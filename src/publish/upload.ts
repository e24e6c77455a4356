/**
 * Writing objects: uploads with the contract's headers, the creators list in parts when large, and
 * deletions in batches, all through a bounded pool that stops at the first failure (nothing further
 * is started, what is in flight is awaited, and the error is thrown).
 */
import { DeleteObjectCommand, DeleteObjectsCommand } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { closeSync, createReadStream, fstatSync, readSync } from 'node:fs';
import { Readable } from 'node:stream';
import { CONTRACT_HEADERS } from '../hosting/routes.js';
import { Remote } from './client.js';
import { inPoolRetryingLater } from './later.js';
import { objectKey } from './target.js';

/** Part size of multipart uploads (reconcile.ts recomputes such ETags with it). */
export const MULTIPART_PART_BYTES = 16 * 1024 * 1024;
/** Files larger than this go up in parts (the creators list, at a million profiles). */
export const MULTIPART_THRESHOLD_BYTES = 64 * 1024 * 1024;
/** S3's limit of keys per DeleteObjects request. */
const DELETE_BATCH = 1000;

/** Headers stored with every public object, and sent back by the bucket on every GET. */
export const OBJECT_HEADERS = {
  ContentType: CONTRACT_HEADERS['Content-Type'],
  CacheControl: CONTRACT_HEADERS['Cache-Control'],
} as const;

/**
 * How an object's bytes are encoded, stored with it (`Content-Encoding`): 'gzip' for the creators
 * list's variant, which hosts send as it is to clients that accept gzip; undefined for plain bytes.
 */
export type StoredEncoding = 'gzip' | undefined;

const headersFor = (encoding: StoredEncoding) =>
  encoding === undefined ? OBJECT_HEADERS : { ...OBJECT_HEADERS, ContentEncoding: encoding };

/** Runs `task` for every item, at most `concurrency` at once; the first failure stops the rest. */
export async function inPool<T>(items: readonly T[], concurrency: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && next < items.length) {
      const item = items[next++]!;
      try {
        await task(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  if (failure !== undefined) throw failure.error;
}

/** The same headers as the wire carries them (fast-put.ts sends them as they are). */
const WIRE_HEADERS = { 'content-type': OBJECT_HEADERS.ContentType, 'cache-control': OBJECT_HEADERS.CacheControl } as const;
const GZIP_WIRE_HEADERS = { ...WIRE_HEADERS, 'content-encoding': 'gzip' } as const;

/** Returns the object's new ETag (quoted, as the bucket gave it), or undefined when it gave none. */
export async function putObject(remote: Remote, path: string, body: Buffer, encoding?: StoredEncoding): Promise<string | undefined> {
  const headers = encoding === undefined ? WIRE_HEADERS : GZIP_WIRE_HEADERS;
  return remote.fastPut.put(objectKey(remote.options.prefix, path), body, headers, `upload ${path}`);
}

/**
 * Uploads a file from an open descriptor to every key given (a profile's aliases): the bytes of the
 * file as it was when opened, even if a build renames a new version over it meanwhile. Large files go
 * up in parts, which S3 shows only once complete: readers see the old object or the new one, never
 * part of it. Returns the bytes sent.
 */
export async function putFile(remote: Remote, paths: readonly string[], fd: number, encoding?: StoredEncoding): Promise<number> {
  const size = fstatSync(fd).size;
  if (size <= (remote.options.multipartThresholdBytes ?? MULTIPART_THRESHOLD_BYTES)) {
    const body = readRange(fd, 0, size);
    for (const path of paths) await putObject(remote, path, body, encoding);
    return size * paths.length;
  }
  // Positional reads from the start: the same bytes for every key, whatever was read before.
  for (const path of paths)
    await uploadInParts(remote, path, createReadStream('', { fd, autoClose: false, start: 0, end: size - 1 }), size, encoding);
  return size * paths.length;
}

/** Bytes held here, or a range of an open file. */
export type BodyPiece = { bytes: Uint8Array } | { fd: number; start: number; end: number };

const pieceBytes = (piece: BodyPiece) => ('bytes' in piece ? piece.bytes.length : piece.end - piece.start);

/**
 * Uploads the pieces, joined, as one object at `path` (a shard's part of the creators list: a few
 * bytes of its own, then a range of a file of the tree). Large bodies go up in parts, streamed.
 * Returns the bytes sent and the object's ETag (a join copies that version only).
 */
export async function putPieces(
  remote: Remote,
  path: string,
  pieces: readonly BodyPiece[],
): Promise<{ bytes: number; etag: string | undefined }> {
  const size = pieces.reduce((sum, piece) => sum + pieceBytes(piece), 0);
  if (size <= (remote.options.multipartThresholdBytes ?? MULTIPART_THRESHOLD_BYTES)) {
    const body = Buffer.concat(pieces.map((piece) => ('bytes' in piece ? piece.bytes : readRange(piece.fd, piece.start, piece.end))));
    return { bytes: size, etag: await putObject(remote, path, body) };
  }
  return { bytes: size, etag: await uploadInParts(remote, path, Readable.from(streamPieces(pieces)), size, undefined) };
}

/** A large body as a multipart upload, streamed: S3 shows the object only once it is complete. */
async function uploadInParts(
  remote: Remote,
  path: string,
  body: Readable,
  size: number,
  encoding: StoredEncoding,
): Promise<string | undefined> {
  const upload = new Upload({
    client: remote.client,
    params: {
      Bucket: remote.options.bucket,
      Key: objectKey(remote.options.prefix, path),
      Body: body,
      ContentLength: size,
      ...headersFor(encoding),
    },
    partSize: remote.options.multipartPartBytes ?? MULTIPART_PART_BYTES,
    queueSize: 4,
    leavePartsOnError: false,
  });
  try {
    return (await upload.done()).ETag;
  } catch (error) {
    throw remote.failure(error, `upload ${path}`);
  }
}

async function* streamPieces(pieces: readonly BodyPiece[]): AsyncGenerator<Uint8Array> {
  for (const piece of pieces) {
    if ('bytes' in piece) yield piece.bytes;
    else if (piece.end > piece.start)
      yield* createReadStream('', { fd: piece.fd, autoClose: false, start: piece.start, end: piece.end - 1 });
  }
}

function readRange(fd: number, start: number, end: number): Buffer {
  const body = Buffer.allocUnsafe(end - start);
  for (let done = 0; done < body.length;) {
    const read = readSync(fd, body, done, body.length - done, start + done);
    if (read === 0) throw new Error(`file shorter than expected (${start + done} of ${end} bytes)`);
    done += read;
  }
  return body;
}

export const closeFile = (fd: number) => closeSync(fd);

/**
 * Deletes objects by key relative to the prefix, a thousand per request; servers without the
 * batch call (Google Cloud Storage's XML API) get one request per key.
 */
export async function deleteObjects(
  remote: Remote,
  paths: readonly string[],
  concurrency: number,
  onDeleted: (count: number) => void,
): Promise<void> {
  const { bucket, prefix } = remote.options;
  const batches: string[][] = [];
  for (let i = 0; i < paths.length; i += DELETE_BATCH) batches.push(paths.slice(i, i + DELETE_BATCH) as string[]);
  let batchable = true;
  await inPoolRetryingLater(remote, batches, Math.max(1, Math.min(4, concurrency)), async (batch) => {
    if (batchable) {
      try {
        const objects = batch.map((path) => ({ Key: objectKey(prefix, path) }));
        const result = await remote.call(
          () => remote.client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects, Quiet: true } })),
          'delete objects',
        );
        const failed = result.Errors ?? [];
        if (failed.length > 0)
          throw remote.failure(
            Object.assign(
              new Error(`${failed.length} keys not deleted, e.g. ${failed[0]!.Key}: ${failed[0]!.Code} ${failed[0]!.Message ?? ''}`),
              { name: failed[0]!.Code ?? 'DeleteFailed' },
            ),
            'delete objects',
          );
        onDeleted(batch.length);
        return;
      } catch (error) {
        if (!Remote.failedWith(error, 'NotImplemented', 'MethodNotAllowed')) throw error;
        batchable = false;
      }
    }
    await inPool(batch, concurrency, async (path) => {
      await remote.call(
        () => remote.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: objectKey(prefix, path) })),
        `delete ${path}`,
      );
      onDeleted(1);
    });
  });
}
