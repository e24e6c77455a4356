/**
 * Writing objects: uploads with the contract's headers, the creators list in parts when large, and
 * deletions in batches, all through a bounded pool that stops at the first failure (nothing further
 * is started, what is in flight is awaited, and the error is thrown).
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { closeSync, fstatSync } from 'node:fs';
import { readInto } from '../../core/read-into.js';
import { CONTRACT_HEADERS } from '../../hosting/routes/routes.js';
import { Remote } from './client.js';
import type { Later } from './later.js';
import { inPool } from './pool.js';
import { quirksOf } from './stores.js';
import { objectKey } from './target.js';

/**
 * Part size of multipart uploads (plan/reconcile.ts recomputes such ETags with it). Each part in
 * flight holds a buffer of this size, so it is what a large upload costs in memory, PARTS_IN_FLIGHT
 * times over. 8 MiB stays above the stores' 5 MiB minimum, and S3's 10,000 parts still hold an
 * 80 GiB list.
 */
export const MULTIPART_PART_BYTES = 8 * 1024 * 1024;
/**
 * Files larger than this go up in parts (the creators list and its variant, from some tens of
 * thousands of profiles on): a smaller file is read whole into a buffer of its own, asked anew for
 * each one, where parts reuse the same few buffers.
 */
export const MULTIPART_THRESHOLD_BYTES = 2 * MULTIPART_PART_BYTES;
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
    const body = joinedBytes([{ fd, start: 0, end: size }], size);
    for (const path of paths) await putObject(remote, path, body, encoding);
    return size * paths.length;
  }
  // Positional reads from the start: the same bytes for every key, whatever was read before.
  for (const path of paths) await uploadInParts(remote, path, [{ fd, start: 0, end: size }], size, encoding);
  return size * paths.length;
}

/** Bytes held here, or a range of an open file. */
export type BodyPiece = { bytes: Uint8Array } | { fd: number; start: number; end: number };

const pieceBytes = (piece: BodyPiece) => ('bytes' in piece ? piece.bytes.length : piece.end - piece.start);

/**
 * Uploads the pieces, joined, as one object at `path` (a shard's part of the creators list: a few
 * bytes of its own, then a range of a file of the tree). Large bodies go up in parts.
 * Returns the bytes sent and the object's ETag (a join copies that version only).
 */
export async function putPieces(
  remote: Remote,
  path: string,
  pieces: readonly BodyPiece[],
): Promise<{ bytes: number; etag: string | undefined }> {
  const size = pieces.reduce((sum, piece) => sum + pieceBytes(piece), 0);
  if (size <= (remote.options.multipartThresholdBytes ?? MULTIPART_THRESHOLD_BYTES)) {
    const body = joinedBytes(pieces, size);
    return { bytes: size, etag: await putObject(remote, path, body) };
  }
  return { bytes: size, etag: await uploadInParts(remote, path, pieces, size, undefined) };
}

/** Parts of one multipart upload in flight at once, each with a buffer of its own, reused. */
const PARTS_IN_FLIGHT = 4;

/**
 * A large body as a multipart upload: S3 shows the object only once it is complete, and the upload
 * is aborted on failure. Each part's bytes are read straight into a buffer of the part's size, one
 * buffer per part in flight, used again for a later part once its upload is answered: no stream of
 * small chunks joined into parts, and no fresh memory for each part.
 */
async function uploadInParts(
  remote: Remote,
  path: string,
  pieces: readonly BodyPiece[],
  size: number,
  encoding: StoredEncoding,
): Promise<string | undefined> {
  const { bucket } = remote.options;
  const key = objectKey(remote.options.prefix, path);
  const partBytes = remote.options.multipartPartBytes ?? MULTIPART_PART_BYTES;
  const created = await remote.call(
    () => remote.client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ...headersFor(encoding) })),
    `upload ${path}`,
  );
  const uploadId = created.UploadId!;
  try {
    const numbers = Array.from({ length: Math.ceil(size / partBytes) }, (_, index) => index + 1);
    const etags: string[] = [];
    const spare = remote.partBuffers;
    await inPool(numbers, PARTS_IN_FLIGHT, async (partNumber) => {
      const buffer = spare.pop() ?? Buffer.allocUnsafe(partBytes);
      const start = (partNumber - 1) * partBytes;
      const body = buffer.subarray(0, Math.min(partBytes, size - start));
      readJoined(pieces, start, body);
      const uploaded = await remote.call(
        () =>
          remote.client.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: body })),
        `upload ${path} (part ${partNumber})`,
      );
      etags[partNumber - 1] = uploaded.ETag!;
      spare.push(buffer);
    });
    const parts = etags.map((ETag, index) => ({ ETag, PartNumber: index + 1 }));
    const done = await remote.call(
      () =>
        remote.client.send(
          new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } }),
        ),
      `upload ${path}`,
    );
    return done.ETag;
  } catch (error) {
    await remote.client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId })).catch(() => undefined);
    throw remote.failure(error, `upload ${path}`);
  }
}

/** Fills `target` with the bytes of the pieces joined, from offset `start` of the whole on. */
function readJoined(pieces: readonly BodyPiece[], start: number, target: Buffer): void {
  let offset = 0;
  let filled = 0;
  for (const piece of pieces) {
    const length = pieceBytes(piece);
    const from = start + filled - offset;
    if (filled < target.length && from >= 0 && from < length) {
      const take = Math.min(length - from, target.length - filled);
      if ('bytes' in piece) target.set(piece.bytes.subarray(from, from + take), filled);
      else readInto(piece.fd, piece.start + from, target.subarray(filled, filled + take));
      filled += take;
    }
    offset += length;
  }
  if (filled < target.length) throw new Error(`body shorter than expected (${start + filled} of ${start + target.length} bytes)`);
}

/** The pieces joined, `size` bytes in all, in one buffer. */
function joinedBytes(pieces: readonly BodyPiece[], size: number): Buffer {
  const body = Buffer.allocUnsafe(size);
  readJoined(pieces, 0, body);
  return body;
}

export const closeFile = (fd: number) => closeSync(fd);

/**
 * Deletes objects by key relative to the prefix, a thousand per request; stores without the
 * batch call (stores.ts, or found by their answer) get one request per key.
 */
export async function deleteObjects(
  remote: Remote,
  paths: readonly string[],
  concurrency: number,
  onDeleted: (count: number) => void,
  later: Later,
): Promise<void> {
  const { bucket, prefix } = remote.options;
  const batches: string[][] = [];
  for (let i = 0; i < paths.length; i += DELETE_BATCH) batches.push(paths.slice(i, i + DELETE_BATCH) as string[]);
  let batchable = quirksOf(remote.options.endpoint).batchDelete;
  await later.inPool(batches, Math.max(1, Math.min(4, concurrency)), async (batch) => {
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
