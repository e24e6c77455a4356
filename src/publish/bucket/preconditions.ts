/**
 * Whether the store honours conditional writes, proven rather than assumed: AWS S3, R2, MinIO and
 * moto refuse a second `If-None-Match: *` create of one key and an `If-Match` on a wrong ETag; some
 * S3-compatible servers (s3rver among them) accept both, and then no lease can keep two publishers
 * apart. Run once per prefix: the lease objects remember the answer.
 */
import { randomBytes } from 'node:crypto';
import type { Remote } from './client.js';
import { deleteObject, writeObject } from './objects.js';

const TYPE = 'text/plain';

/**
 * True when the store refused both writes it should refuse. Leaves no object behind. Asked by the
 * holder of a lease, at `probe` beside the lease's object: holders of different leases (shards
 * publishing side by side) never probe the same key.
 */
export async function provePreconditions(remote: Remote, probe: string): Promise<boolean> {
  const body = () => `probe ${randomBytes(6).toString('hex')}`;
  try {
    // The first create may meet a probe left by a publisher killed mid-probe: refused, and that is fine.
    await writeObject(remote, probe, body(), TYPE, { ifNoneMatch: '*' });
    const secondCreate = await writeObject(remote, probe, body(), TYPE, { ifNoneMatch: '*' });
    const wrongMatch = await writeObject(remote, probe, body(), TYPE, { ifMatch: '"00000000000000000000000000000000"' });
    return secondCreate === 'refused' && wrongMatch === 'refused';
  } finally {
    await deleteObject(remote, probe);
  }
}
