/**
 * The options that name a bucket and how to reach it, shared by `publish` and `watch --publish`:
 * each flag first, then its environment variable. Credentials are never options: the AWS SDK's own
 * chain finds them (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE, instance roles...).
 */
import { Command, Option } from 'commander';
import { seconds, wholeNumber } from './numbers.js';
import { usageError } from '../core/errors.js';
import type { RemoteOptions } from '../publish/bucket/client.js';
import { DEFAULT_LEASE_TTL_MS, DEFAULT_LOCK_TIMEOUT_MS } from '../publish/lease/defaults.js';
import type { PublishOptions } from '../publish/report.js';
import { parseTarget } from '../publish/bucket/target.js';
import type { Io } from './io.js';

/**
 * Requests in flight: chosen from the measured cold publish of a million users (BENCHMARKS.md,
 * publish-1m), the fastest setting whose peak memory stays within the target; more in flight was
 * faster still, and larger.
 */
export const DEFAULT_CONCURRENCY = 128;

export interface RemoteFlags {
  endpoint?: string;
  region?: string;
  pathStyle?: boolean;
  concurrency?: string;
  maxDeletes?: string;
  force?: boolean;
  lockTimeout: string;
  leaseTtl: string;
  singleWriter: boolean;
  equalParts?: boolean;
}

export function addRemoteOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--endpoint <url>',
        'S3-compatible endpoint (MinIO, R2, GCS...) [env: AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL] (default: AWS S3)',
      ),
    )
    .addOption(
      new Option(
        '--region <name>',
        "the bucket's region [env: AWS_REGION, AWS_DEFAULT_REGION, or the AWS profile's] (default with --endpoint: us-east-1)",
      ),
    )
    .option('--path-style', 'path-style requests (endpoint/bucket/key), as MinIO-like servers want', false)
    .addOption(new Option('--concurrency <n>', 'requests in flight at once').default(String(DEFAULT_CONCURRENCY)))
    .option(
      '--equal-parts',
      "join a sharded prefix's creators list in parts of one size but the last, as R2 requires (the default on *.r2.cloudflarestorage.com)",
    )
    .addOption(new Option('--max-deletes <n>', 'objects a publish may delete (default: 10% of the live profile objects, at least 100)'))
    .option('--force', 'no deletion guard: delete whatever the tree no longer has', false)
    .addOption(
      new Option(
        '--lock-timeout <seconds>',
        'how long to wait while another publisher holds the prefix, then exit 8 (transient: retry later)',
      ).default(String(DEFAULT_LOCK_TIMEOUT_MS / 1000)),
    )
    .addOption(
      new Option(
        '--lease-ttl <seconds>',
        "how long a publisher's lease on the prefix lives unrenewed (renewed every quarter of it): a killed publisher blocks others this long at most",
      ).default(String(DEFAULT_LEASE_TTL_MS / 1000)),
    )
    .option(
      '--single-writer',
      'accept a store that ignores conditional writes (If-None-Match, If-Match), which publishers need to take turns; only one may ever write to the prefix then',
      false,
    );
}

export const REMOTE_ENV_HELP = `
Credentials come from the AWS SDK's chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and
AWS_SESSION_TOKEN), AWS_PROFILE, or a role. They never appear in output, logs or status files.
Failed requests (throttling, 5xx, dropped connections) are retried with backoff: AWS_MAX_ATTEMPTS
attempts in all (default 6).

A long publish writes a checkpoint of its record every PROFILE_PUBLISH_CHECKPOINT_EVERY profiles
(default 100000): a publisher taking over after a crash re-sends only what came after it.

Several publishers (a CI deploy, a watcher, a second watcher) may share a prefix: they take turns
through a lease object under <prefix>/.profile-snapshot/, written with conditional writes, which the
store must honour (AWS S3, R2 and MinIO do; the first publish to a prefix checks it).
`;

/** The bucket and the way to it. `to` is the s3:// URL, `toSource` where it came from (for errors). */
export function resolveRemoteOptions(to: string, toSource: string, flags: RemoteFlags, io: Io): RemoteOptions {
  // The pinned SDK release supports Node 20; its notice about later releases is not the user's business.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const endpoint = flags.endpoint ?? nonEmpty(io.env.AWS_ENDPOINT_URL_S3) ?? nonEmpty(io.env.AWS_ENDPOINT_URL);
  if (endpoint !== undefined && !/^https?:\/\/[^/]/.test(endpoint)) {
    throw usageError(
      `the endpoint must be an http(s) URL, got ${JSON.stringify(endpoint)}`,
      'pass e.g. --endpoint https://<account>.r2.cloudflarestorage.com',
    );
  }
  const concurrency = wholeNumber(flags.concurrency ?? String(DEFAULT_CONCURRENCY), '--concurrency');
  if (concurrency < 1 || concurrency > 1024) throw usageError('--concurrency must be between 1 and 1024');
  return {
    ...parseTarget(to, toSource),
    endpoint,
    region: flags.region ?? nonEmpty(io.env.AWS_REGION) ?? nonEmpty(io.env.AWS_DEFAULT_REGION),
    pathStyle: Boolean(flags.pathStyle),
    concurrency,
    equalParts: flags.equalParts,
    // The SDK's own variable, which an explicit setting would otherwise override.
    maxAttempts: io.env.AWS_MAX_ATTEMPTS === undefined ? undefined : wholeNumber(io.env.AWS_MAX_ATTEMPTS, 'AWS_MAX_ATTEMPTS'),
  };
}

/** PROFILE_PUBLISH_CHECKPOINT_EVERY: profiles a publish sends between two checkpoints of its record (publish/record/checkpoint.ts). */
export function resolveCheckpoints(io: Io): Pick<PublishOptions, 'checkpointProfiles'> {
  const value = io.env.PROFILE_PUBLISH_CHECKPOINT_EVERY;
  if (value === undefined || value === '') return {};
  const every = wholeNumber(value, 'PROFILE_PUBLISH_CHECKPOINT_EVERY');
  if (every < 1) throw usageError('PROFILE_PUBLISH_CHECKPOINT_EVERY must be at least 1');
  return { checkpointProfiles: every };
}

/** How publishers on one prefix take turns: the lease's flags. */
export function resolveLease(flags: RemoteFlags): Pick<PublishOptions, 'lockTimeoutMs' | 'leaseTtlMs' | 'singleWriter'> {
  const leaseTtlMs = seconds(flags.leaseTtl, '--lease-ttl', false);
  if (leaseTtlMs < 1000) throw usageError(`--lease-ttl must be at least 1 second, not ${flags.leaseTtl}`);
  return { lockTimeoutMs: seconds(flags.lockTimeout, '--lock-timeout', true), leaseTtlMs, singleWriter: flags.singleWriter };
}

/** The deletion guard's flags. */
export function resolveGuard(flags: RemoteFlags): { maxDeletes: number | undefined; force: boolean } {
  return {
    maxDeletes: flags.maxDeletes === undefined ? undefined : wholeNumber(flags.maxDeletes, '--max-deletes'),
    force: Boolean(flags.force),
  };
}

const nonEmpty = (value: string | undefined) => (value === undefined || value === '' ? undefined : value);
