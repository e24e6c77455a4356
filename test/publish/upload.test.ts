/**
 * Large uploads in parts (publish/bucket/upload.ts), on moto_server, which enforces S3's 5 MiB part minimum
 * and keeps multipart uploads until they are completed or aborted: a body joined from bytes and a
 * file's range arrives exactly, cut where the publish's ETag arithmetic expects; a body that cannot be
 * read leaves no object and no upload behind.
 */
import { GetObjectCommand, HeadObjectCommand, ListMultipartUploadsCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Remote } from '../../src/publish/bucket/client.js';
import { putFile, putPieces } from '../../src/publish/bucket/upload.js';
import { clientFor, CREDENTIALS, hasMoto, startMoto, type S3Server } from '../helpers/s3.js';

const MiB = 2 ** 20;
const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest();

/** S3's ETag of a multipart upload cut into parts of `partBytes`: MD5 of the parts' MD5s, and their count. */
function multipartEtag(bytes: Buffer, partBytes: number): string {
  const digests: Buffer[] = [];
  for (let start = 0; start < bytes.length; start += partBytes) digests.push(md5(bytes.subarray(start, start + partBytes)));
  return `"${md5(Buffer.concat(digests)).toString('hex')}-${digests.length}"`;
}

describe.skipIf(!hasMoto)('uploads in parts, on moto_server', () => {
  let server: S3Server;
  let bucket: string;
  let client: S3Client;
  let remote: Remote;
  let dir: string;
  beforeAll(async () => {
    server = await startMoto();
    bucket = await server.bucket();
    client = clientFor(server.endpoint);
    process.env.AWS_ACCESS_KEY_ID = CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = CREDENTIALS.secretAccessKey;
    remote = await Remote.open({
      ...{ bucket, prefix: 'site', endpoint: server.endpoint, region: 'us-east-1', pathStyle: true, concurrency: 4 },
      ...{ multipartThresholdBytes: 5 * MiB, multipartPartBytes: 5 * MiB },
    });
    dir = mkdtempSync(join(tmpdir(), 'ps-upload-'));
  }, 30_000);
  afterAll(async () => {
    remote?.close();
    client?.destroy();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const get = async (key: string) => {
    const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return {
      bytes: Buffer.from(await out.Body!.transformToByteArray()),
      etag: out.ETag,
      type: out.ContentType,
      encoding: out.ContentEncoding,
    };
  };
  const openFile = (name: string, bytes: Buffer) => {
    writeFileSync(join(dir, name), bytes);
    return openSync(join(dir, name), 'r');
  };

  it("joins bytes and a file's range into parts that cross the pieces, exactly", async () => {
    const file = randomBytes(17 * MiB + 11);
    const fd = openFile('list.json', file);
    const head = Buffer.from('{"data":[');
    const tail = Buffer.from('],"meta":{}}');
    try {
      const sent = await putPieces(remote, 'parts/0', [{ bytes: head }, { fd, start: 5, end: file.length - 3 }, { bytes: tail }]);
      const expected = Buffer.concat([head, file.subarray(5, file.length - 3), tail]);
      expect(sent.bytes).toBe(expected.length);
      const stored = await get('site/parts/0');
      expect(stored.bytes.equals(expected)).toBe(true);
      // Four parts, cut every 5 MiB of the joined body: the ETag a publish recomputes for a listed object.
      expect(sent.etag).toBe(multipartEtag(expected, 5 * MiB));
      expect(stored.etag).toBe(sent.etag);
    } finally {
      closeSync(fd);
    }
  });

  it('uploads a large file with the contract headers and its encoding', async () => {
    const file = randomBytes(11 * MiB);
    const fd = openFile('creators.json.gz', file);
    try {
      expect(await putFile(remote, ['creators.gz'], fd, 'gzip')).toBe(file.length);
    } finally {
      closeSync(fd);
    }
    const stored = await get('site/creators.gz');
    expect(stored.bytes.equals(file)).toBe(true);
    expect(stored.etag).toBe(multipartEtag(file, 5 * MiB));
    expect(stored.type).toBe('application/json; charset=utf-8');
    expect(stored.encoding).toBe('gzip');
  });

  it('reuses its part buffers from one large object to the next, and lets go of them when closed', async () => {
    const own = await Remote.open({ ...remote.options, region: 'us-east-1' });
    try {
      const body = randomBytes(11 * MiB);
      await putPieces(own, 'first.json', [{ bytes: body }]);
      const buffers = [...own.partBuffers];
      // Three parts, sent at once: three buffers, kept for the next object.
      expect(buffers.map((buffer) => buffer.length)).toEqual([5 * MiB, 5 * MiB, 5 * MiB]);
      await putPieces(own, 'second.json', [{ bytes: body }]);
      expect(new Set([...own.partBuffers, ...buffers]).size).toBe(3);
    } finally {
      own.close();
    }
    // A watcher's publish thread lives on after its publish: what the closed remote held must go.
    expect(own.partBuffers).toEqual([]);
  });

  it('leaves no object and no open upload when the body cannot be read', async () => {
    const file = randomBytes(12 * MiB);
    const fd = openFile('short.json', file);
    try {
      // The range runs past the file's end, as when the file was cut short under the publish.
      await expect(putPieces(remote, 'parts/short', [{ fd, start: 0, end: file.length + MiB }])).rejects.toThrow(/shorter than expected/);
    } finally {
      closeSync(fd);
    }
    await expect(client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'site/parts/short' }))).rejects.toMatchObject({
      name: 'NotFound',
    });
    const open = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    expect(open.Uploads ?? []).toEqual([]);
  });
});
