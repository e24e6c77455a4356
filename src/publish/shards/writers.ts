/**
 * Who may write a shard, checked before anything reaches the bucket, and apart from the layout so
 * that the CLI checks its flags without loading the AWS SDK.
 */
import { usageError } from '../../core/errors.js';
import { formatSlice, type Slice } from '../../core/slice.js';

/**
 * A shard is never published with --single-writer (exit 2): a sharded prefix has a writer per shard
 * by design, and a store that ignores conditional writes cannot keep their joins of the list apart.
 */
export function assertShardWriters(shard: Slice | undefined, singleWriter: boolean | undefined): void {
  if (shard === undefined || !singleWriter) return;
  throw usageError(
    `--single-writer cannot publish shard ${formatSlice(shard)}: a sharded prefix has ${shard.count} writers, and a store that ignores conditional writes cannot keep their joins of the creators list apart`,
    'publish shards to a store that honours conditional writes (AWS S3, R2, MinIO) without --single-writer, or build and publish a whole tree',
  );
}
