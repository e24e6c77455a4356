/**
 * The tool's own objects read back (publish/bucket/objects.ts), on s3rver: the bytes exactly, whole
 * or their first ones, copied into one buffer of the length the response gave; a body that is not
 * that length is an error, not a record cut short or run over.
 */
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Remote } from '../../src/publish/bucket/client.js';
import { bodyBytes, readObject, type StreamingBody } from '../../src/publish/bucket/objects.js';
import { clientFor, CREDENTIALS, startS3rver, type S3Server } from '../helpers/s3.js';

describe('an object read back', () => {
  let server: S3Server;
  let client: S3Client;
  let remote: Remote;
  let bucket: string;
  beforeAll(async () => {
    server = await startS3rver();
    bucket = await server.bucket();
    client = clientFor(server.endpoint);
    process.env.AWS_ACCESS_KEY_ID = CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = CREDENTIALS.secretAccessKey;
    remote = await Remote.open({ bucket, prefix: 'site', endpoint: server.endpoint, region: 'us-east-1', pathStyle: true, concurrency: 2 });
  }, 30_000);
  afterAll(async () => {
    remote?.close();
    client?.destroy();
    await server?.close();
  });

  it('is its bytes, in one buffer of their length, whole or its first ones', async () => {
    // Several megabytes: the body arrives in many chunks.
    const bytes = randomBytes(6 * 2 ** 20 + 17);
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: 'site/.profile-snapshot/state', Body: bytes }));
    const whole = await readObject(remote, '.profile-snapshot/state');
    expect(whole).not.toBe('unchanged');
    const read = whole as Exclude<typeof whole, 'unchanged' | undefined>;
    expect(Buffer.from(read.bytes).equals(bytes)).toBe(true);
    expect(read.bytes.buffer.byteLength).toBe(bytes.length);
    const first = (await readObject(remote, '.profile-snapshot/state', undefined, 1000)) as typeof read;
    expect(Buffer.from(first.bytes).equals(bytes.subarray(0, 1000))).toBe(true);
    expect(await readObject(remote, '.profile-snapshot/state', read.etag)).toBe('unchanged');
    expect(await readObject(remote, '.profile-snapshot/none')).toBeUndefined();
  });

  it('refuses a body longer or shorter than its stated length', async () => {
    const body = (...chunks: string[]) => Readable.from(chunks.map((chunk) => Buffer.from(chunk))) as unknown as StreamingBody;
    expect(Buffer.from(await bodyBytes(body('ab', 'cd'), 4)).toString()).toBe('abcd');
    await expect(bodyBytes(body('ab', 'cde'), 4)).rejects.toThrow(/longer than its Content-Length \(4 bytes\)/);
    await expect(bodyBytes(body('ab'), 4)).rejects.toThrow(/ended after 2 of its 4 bytes/);
  });
});
