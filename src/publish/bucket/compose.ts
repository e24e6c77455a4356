/**
 * Joins objects of the bucket into one, server-side, as compose-plan.ts plans it: one multipart
 * upload whose parts are copies of byte ranges (`UploadPartCopy`) or, where no rule lets a copy
 * stand, bytes read and uploaded. Each copied range is of the version named (`ifMatch`: the source
 * ETag): the copies ask for it (`x-amz-copy-source-if-match`), and before the upload is completed
 * every named source is looked at once more (not every S3-compatible store honours the copy's
 * condition), so a source rewritten during the composition fails it instead of mixing two
 * versions. Any failure aborts the upload: the target object stays as it was.
 *
 * The completion may carry a condition on the target (`If-Match` the version read before the
 * composition began, or `If-None-Match: *` when there was none): S3 and R2 then refuse to replace an
 * object another writer replaced meanwhile, however late the completion arrives.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { remoteError } from '../../core/errors.js';
import { limitTo, type Limit } from '../../core/limit.js';
import { Remote } from './client.js';
import { bodyBytes, conditionInput, type WriteCondition } from './objects.js';
import { planParts, type ComposeSource, type PartPiece, type PartRules, type PlannedPart } from './compose-plan.js';
import { OBJECT_HEADERS, type StoredEncoding } from './upload.js';

/** A source object's range, as the version with `etag` holds it (the ETag as the bucket gave it). */
export interface ObjectRange {
  key: string;
  start: number;
  end: number;
  etag?: string;
}

/** What a composition sent: parts copied and uploaded, and the bytes it had to read and upload. */
export interface ComposeResult {
  etag: string;
  copiedParts: number;
  uploadedParts: number;
  uploadedBytes: number;
}

/** Writes `targetKey` as `sources` joined, under `rules` (S3's, or R2's equal parts). */
export async function composeObject(
  remote: Remote,
  targetKey: string,
  sources: readonly (ObjectRange | { bytes: Uint8Array })[],
  rules: PartRules,
  encoding?: StoredEncoding,
): Promise<ComposeResult> {
  const prepared = await prepareComposition(remote, targetKey, sources, rules, { encoding });
  const result = await prepared.complete();
  if (result === 'refused') throw remoteError(`${targetKey} changed while it was joined`, 'join it again');
  return result;
}

export interface CompositionOptions {
  encoding?: StoredEncoding;
  /** What the target must still be when the composition completes (see the top of this file). */
  condition?: WriteCondition;
  /**
   * The copies and uploads in flight at once (default: --concurrency of them). An uploaded part is
   * held in memory while it is sent, so this also bounds the bytes a composition holds.
   */
  limit?: Limit;
}

/** A composition whose parts are all in place: completing it replaces the target at once. */
export interface PreparedComposition {
  /** The result, or 'refused' when the target is no longer as `condition` said (then the upload is aborted). */
  complete(): Promise<ComposeResult | 'refused'>;
  abort(): Promise<void>;
}

/** The target's version now (its ETag), or undefined when it is absent: what a completion's condition names. */
export async function versionOf(remote: Remote, key: string): Promise<string | undefined> {
  try {
    const head = await remote.call(
      () => remote.client.send(new HeadObjectCommand({ Bucket: remote.options.bucket, Key: key })),
      `look at ${key}`,
    );
    return head.ETag;
  } catch (error) {
    if (Remote.failedWith(error, 'NotFound', 'NoSuchKey')) return undefined;
    throw error;
  }
}

/**
 * Everything but the last request: the upload created and every part copied or uploaded. Several
 * objects that change together (the list and its gzip variant) are then completed side by side,
 * so readers see them change within moments of each other. On failure the upload is aborted.
 */
export async function prepareComposition(
  remote: Remote,
  targetKey: string,
  sources: readonly (ObjectRange | { bytes: Uint8Array })[],
  rules: PartRules,
  { encoding, condition, limit = limitTo(remote.options.concurrency) }: CompositionOptions = {},
): Promise<PreparedComposition> {
  const { bucket } = remote.options;
  const etags = new Map(sources.flatMap((s) => ('key' in s && s.etag !== undefined ? [[s.key, s.etag] as const] : [])));
  const plan = planParts(sources as ComposeSource[], rules);
  const created = await remote.call(
    () =>
      remote.client.send(
        new CreateMultipartUploadCommand({
          Bucket: bucket,
          Key: targetKey,
          ...OBJECT_HEADERS,
          ...(encoding === undefined ? {} : { ContentEncoding: encoding }),
        }),
      ),
    `start joining ${targetKey}`,
  );
  const uploadId = created.UploadId!;
  const abort = async () => {
    await remote.client
      .send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: targetKey, UploadId: uploadId }))
      .catch(() => undefined);
  };
  const result: ComposeResult = { etag: '', copiedParts: 0, uploadedParts: 0, uploadedBytes: 0 };
  let parts: CompletedPart[];
  try {
    // Side by side: a copy costs the store time, not this process.
    parts = await Promise.all(
      plan.map((part, index) => limit(() => sendPart(remote, targetKey, uploadId, index + 1, part, etags, result))),
    );
    // Copies made: each source must still be the version named, or the copy may hold another.
    await checkSources(remote, targetKey, etags);
  } catch (error) {
    await abort();
    throw error;
  }
  const complete = async (): Promise<ComposeResult | 'refused'> => {
    try {
      const done = await remote.call(
        () =>
          remote.client.send(
            new CompleteMultipartUploadCommand({
              ...{ Bucket: bucket, Key: targetKey, UploadId: uploadId, MultipartUpload: { Parts: parts } },
              ...conditionInput(condition),
            }),
          ),
        `finish joining ${targetKey}`,
      );
      return { ...result, etag: done.ETag ?? '' };
    } catch (error) {
      // S3 answers If-Match over a missing object with NoSuchKey, not 412.
      const refused =
        condition !== undefined && (Remote.preconditionFailed(error) || ('ifMatch' in condition && Remote.failedWith(error, 'NoSuchKey')));
      // A completion sent again after its answer was lost finds its own object, not the version it named.
      if (refused && (await completedEarlier(remote, targetKey, uploadId).catch(() => false)))
        return { ...result, etag: (await versionOf(remote, targetKey)) ?? '' };
      await abort();
      if (refused) return 'refused';
      throw error;
    }
  };
  return { complete, abort };
}

async function sendPart(
  remote: Remote,
  key: string,
  uploadId: string,
  partNumber: number,
  part: PlannedPart,
  etags: ReadonlyMap<string, string>,
  result: ComposeResult,
): Promise<CompletedPart> {
  const { bucket } = remote.options;
  if ('copy' in part) {
    const { key: source, start, end } = part.copy;
    const copied = await remote.call(
      () =>
        remote.client.send(
          new UploadPartCopyCommand({
            Bucket: bucket,
            Key: key,
            UploadId: uploadId,
            PartNumber: partNumber,
            CopySource: `${bucket}/${encodeURIComponent(source)}`,
            CopySourceRange: `bytes=${start}-${end - 1}`,
            CopySourceIfMatch: etags.get(source),
          }),
        ),
      `copy ${source} into ${key}`,
    );
    result.copiedParts += 1;
    return { PartNumber: partNumber, ETag: copied.CopyPartResult?.ETag };
  }
  const body = Buffer.concat(await Promise.all(part.upload.map((piece) => bytesOf(remote, piece, etags))));
  const uploaded = await remote.call(
    () => remote.client.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: body })),
    `upload a part of ${key}`,
  );
  result.uploadedParts += 1;
  result.uploadedBytes += body.length;
  return { PartNumber: partNumber, ETag: uploaded.ETag };
}

/** Whether the upload is gone though never aborted: an earlier attempt of its completion landed. */
async function completedEarlier(remote: Remote, key: string, uploadId: string): Promise<boolean> {
  try {
    await remote.call(
      () => remote.client.send(new ListPartsCommand({ Bucket: remote.options.bucket, Key: key, UploadId: uploadId, MaxParts: 1 })),
      `look at the upload of ${key}`,
    );
    return false;
  } catch (error) {
    if (Remote.failedWith(error, 'NoSuchUpload')) return true;
    throw error;
  }
}

/** Fails when a source named by its ETag has changed since. */
async function checkSources(remote: Remote, targetKey: string, etags: ReadonlyMap<string, string>): Promise<void> {
  for (const [key, etag] of etags) {
    const head = await remote.call(
      () => remote.client.send(new HeadObjectCommand({ Bucket: remote.options.bucket, Key: key })),
      `look at ${key} before joining it`,
    );
    if (head.ETag !== etag) {
      throw remoteError(
        `${key} changed while ${targetKey} was joined from it`,
        'join again: the composition reads each source as it is then',
      );
    }
  }
}

/** A piece's bytes: held here, or read from its object (the version named, when one is). */
async function bytesOf(remote: Remote, piece: PartPiece, etags: ReadonlyMap<string, string>): Promise<Uint8Array> {
  if ('bytes' in piece) return piece.bytes;
  const { key, start, end } = piece;
  const read = await remote.call(async () => {
    const output = await remote.client.send(
      new GetObjectCommand({ Bucket: remote.options.bucket, Key: key, Range: `bytes=${start}-${end - 1}`, IfMatch: etags.get(key) }),
    );
    return { $metadata: output.$metadata, bytes: await bodyBytes(output.Body!, output.ContentLength) };
  }, `read ${key} to join it`);
  return read.bytes;
}
