/**
 * The creators list of a sharded prefix, joined in the bucket from every shard's part (parts.ts):
 * one multipart upload per object whose parts are server-side copies of the shards' parts
 * (`UploadPartCopy`), and one small uploaded tail: `],"meta":{...}}`, and for the gzip variant that
 * tail deflated as the stream's last block plus the gzip trailer, whose CRC-32 is combined from the
 * parts' CRCs (crc32_combine) without reading them. No machine reads or writes the whole list.
 *
 * Who joins, and when: whoever holds the prefix's compose lease, taken by each shard's publish
 * right after it wrote its part, and only when the last joined list (`shards/joined`) does not
 * already name every current part. So a list changes at most once per shard publish, a change of any
 * shard reaches the live list within that shard's publish, and publishers of different shards wait
 * for each other only while one joins. A missing part is never skipped: the list is left as it is
 * until every shard has published one (a shard's publish then reports it; `compose` fails, exit 11).
 *
 * The joined list's meta: the newest of the shards' timestamps, and the longest of their execution
 * times (the shards ran side by side), so joining the same parts gives the same bytes.
 */
import { performance } from 'node:perf_hooks';
import { partMissingError, remoteError, shardCountError, shardLayoutError } from '../../core/errors.js';
import { CREATORS_FILE, CREATORS_GZIP_FILE } from '../../core/layout.js';
import { JOINED } from '../keys.js';
import { plural } from '../../core/text.js';
import { crc32, crc32Combine, deflatePiece, gzipTrailer } from '../../output/gzip-member.js';
import { API_VERSION, envelopeTail } from '../../render/documents.js';
import { Remote, type RemoteOptions, type RequestCounts } from '../bucket/client.js';
import { limitTo } from '../../core/limit.js';
import { prepareComposition, versionOf, type ComposeResult, type ObjectRange } from '../bucket/compose.js';
import { r2PartRules, S3_PART_RULES, type PartRules } from '../bucket/compose-plan.js';
import { LIST_FILES } from '../plan/plan.js';
import { Lease, thisHolder, type LeaseOptions } from '../lease/lease.js';
import { DEFAULT_LEASE_TTL_MS, DEFAULT_LOCK_TIMEOUT_MS } from '../lease/defaults.js';
import { readShardCount } from './layout.js';
import { readObject, unchangedSince, writeObject } from '../bucket/objects.js';
import { brokenObjects, LEAD_CRC, readPartIndex, removeOldParts, type PartIndex } from './part.js';
import type { Slice } from '../../core/slice.js';
import { objectKey } from '../bucket/target.js';

export interface JoinOptions {
  /** The prefix's shard count. */
  count: number;
  lease: LeaseOptions;
  /** How long to wait for another composer. */
  waitMs: number;
  /** Fail (exit 11) when a shard has no part yet, instead of reporting it. */
  required: boolean;
  /** Join even when the last joined list names every current part. */
  force?: boolean;
}

export interface JoinReport {
  /** Whether this call wrote the list. */
  joined: boolean;
  /** Shards that have no part yet: nothing was joined. */
  missing: number[];
  /** The part of each shard the live list holds (after this call), when it holds every shard's. */
  parts: string[] | undefined;
  copiedParts: number;
  uploadedParts: number;
  uploadedBytes: number;
  /** Whether another composer replaced the list while this call joined it: its join stands, this one was dropped. */
  superseded: boolean;
  /** Shards whose part objects are gone from the bucket or were replaced: nothing was joined. */
  broken: readonly number[];
}

/**
 * Joins the list from every shard's current part, unless it already holds them all. Fenced twice:
 * every request checks the compose lease right before it is sent (a composer that lost it stops
 * sending), and the bucket completes each object and writes `joined` only over the versions read at
 * the start. A join that finds the list moved on lets the newer join stand (`superseded`).
 */
export async function joinList(remote: Remote, options: JoinOptions): Promise<JoinReport> {
  const report: JoinReport = { ...NOTHING_JOINED, missing: [] };
  const lease = await Lease.acquire(remote, 'compose', options.lease, options.waitMs);
  const outerFence = remote.fence;
  try {
    lease.keepRenewing();
    remote.fence = () => {
      outerFence?.();
      lease.assertHeld();
    };
    const [indexes, last, versions] = await Promise.all([
      readIndexes(remote, options.count),
      readJoined(remote),
      Promise.all(LIST_FILES.map((file) => versionOf(remote, objectKey(remote.options.prefix, file)))),
    ]);
    report.missing = indexes.flatMap((index, shard) => (index === undefined ? [shard] : []));
    if (report.missing.length > 0) {
      if (options.required) throw missingError(remote, options.count, report.missing);
      return { ...report, parts: last?.parts };
    }
    const parts = (indexes as PartIndex[]).map((index) => index.id);
    if (!options.force && last?.parts !== undefined && last.parts.join('\n') === parts.join('\n')) return { ...report, parts };
    const results = await replaceList(remote, lease, indexes as PartIndex[], versions).catch(async (error: unknown) => {
      // A part gone from the bucket (a lifecycle rule, a hand) stops this join, not the publish that asked for it.
      const broken = await brokenShards(remote, indexes as PartIndex[]);
      if (broken.length === 0) throw error;
      if (options.required) throw brokenError(remote, options.count, broken);
      return { broken };
    });
    if (typeof results === 'object' && 'broken' in results) return { ...report, broken: results.broken, parts: last?.parts };
    if (results === 'superseded') return { ...report, parts: (await readJoined(remote))?.parts, superseded: true };
    const record = `${JSON.stringify({ tool: 'profile-snapshot', shards: options.count, parts })}\n`;
    if ((await writeObject(remote, JOINED, record, 'application/json', unchangedSince(last?.etag))) === 'refused')
      throw await listMovedOn(remote);
    return { ...report, ...sum(results), joined: true, parts };
  } finally {
    remote.fence = outerFence;
    await lease.release();
  }
}

const NOTHING_JOINED = {
  joined: false,
  parts: undefined,
  copiedParts: 0,
  uploadedParts: 0,
  uploadedBytes: 0,
  superseded: false,
  broken: [],
} as const;

/**
 * Composes the list and its variant from the parts and completes both, each only over the version
 * `versions` names; 'superseded' when the bucket refused either (another join replaced it).
 */
async function replaceList(
  remote: Remote,
  lease: Lease,
  indexes: readonly PartIndex[],
  versions: readonly (string | undefined)[],
): Promise<ComposeResult[] | 'superseded'> {
  const plan = joinPlan(remote, indexes);
  const rules = partRules(remote);
  const key = (file: string) => objectKey(remote.options.prefix, file);
  // Both objects' copies and uploads within one --concurrency, and so the bytes held in memory.
  const limit = limitTo(remote.options.concurrency);
  const settled = await Promise.allSettled([
    prepareComposition(remote, key(CREATORS_FILE), plan.identity, rules, { condition: unchangedSince(versions[0]), limit }),
    prepareComposition(remote, key(CREATORS_GZIP_FILE), plan.gzip, rules, {
      encoding: 'gzip',
      condition: unchangedSince(versions[1]),
      limit,
    }),
  ]);
  const prepared = settled.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  try {
    for (const outcome of settled) if (outcome.status === 'rejected') throw outcome.reason;
    lease.assertHeld();
  } catch (error) {
    await Promise.all(prepared.map((composition) => composition.abort()));
    throw error;
  }
  const results = await Promise.all(prepared.map((composition) => composition.complete()));
  const completed = results.filter((result): result is ComposeResult => result !== 'refused');
  if (completed.length === results.length) return completed;
  // One object replaced and not the other: the pair is two joins apart until the next join.
  if (completed.length > 0) await forgetJoined(remote);
  return 'superseded';
}

/**
 * The record of the last join was replaced after this join read it, so this join's completions may
 * have landed over a newer list (a store that ignores their conditions): the record is cleared, so
 * that no shard trusts it, and the next shard publish joins again.
 */
async function listMovedOn(remote: Remote) {
  await forgetJoined(remote);
  return remoteError(
    `the creators list of ${remote.where} was joined by another composer while this one wrote it (this one stalled past its compose lease)`,
    'nothing to do: the next publish of any shard joins the list again (or run profile-snapshot compose)',
  );
}

/** Replaces the record of the last join, as it is now, by one naming no parts (every shard then joins again). */
async function forgetJoined(remote: Remote): Promise<void> {
  const last = await readJoined(remote);
  if (last === undefined) return;
  const record = `${JSON.stringify({ tool: 'profile-snapshot', parts: null, forgotten: 'a join was superseded halfway' })}\n`;
  await writeObject(remote, JOINED, record, 'application/json', unchangedSince(last.etag));
}

/**
 * For a shard's publish, after it wrote its part (or found it written): joins the list unless it
 * already holds the shard's current part (two reads, no lease), then removes the shard's older parts
 * once the list no longer needs them. `holdsPart`: whether the live list now holds the current part.
 */
export async function joinShard(
  remote: Remote,
  shard: Slice,
  options: Omit<JoinOptions, 'count' | 'required'>,
): Promise<{ report: JoinReport; holdsPart: boolean }> {
  const [current, last] = await Promise.all([readPartIndex(remote, shard), readJoined(remote)]);
  if (current !== undefined && last?.parts?.[shard.index] === current.id) {
    return { report: { ...NOTHING_JOINED, missing: [], parts: last.parts }, holdsPart: true };
  }
  const report = await joinList(remote, { ...options, count: shard.count, required: false });
  const holdsPart = current !== undefined && report.parts?.[shard.index] === current.id;
  if (holdsPart) await removeOldParts(remote, shard, current);
  return { report, holdsPart };
}

async function readIndexes(remote: Remote, count: number): Promise<(PartIndex | undefined)[]> {
  return Promise.all(Array.from({ length: count }, (_, index) => readPartIndex(remote, { index, count })));
}

/**
 * The record of the last join: the parts the live list was joined from, by shard, and its version.
 * A record that cannot be read (damaged, cut short, written by hand, forgotten) names no parts: the
 * list is joined again, never a reason for every shard to fail.
 */
async function readJoined(remote: Remote): Promise<{ parts: string[] | undefined; etag: string } | undefined> {
  const stored = await readObject(remote, JOINED);
  if (stored === undefined || stored === 'unchanged') return undefined;
  let body: { parts?: unknown } | null;
  try {
    body = JSON.parse(Buffer.from(stored.bytes).toString('utf8')) as { parts?: unknown } | null;
  } catch {
    body = null;
  }
  return { parts: Array.isArray(body?.parts) ? body.parts.map(String) : undefined, etag: stored.etag };
}

type Source = ObjectRange | { bytes: Uint8Array };

/** Both objects' sources in shard order, and their tails. */
function joinPlan(remote: Remote, indexes: readonly PartIndex[]): { identity: Source[]; gzip: Source[] } {
  const key = (path: string) => objectKey(remote.options.prefix, path);
  const identity: Source[] = [];
  const gzip: Source[] = [];
  let crc = 0;
  let length = 0;
  let members = false;
  for (const [shard, index] of indexes.entries()) {
    if (shard > 0 && index.memberBytes === 0) continue;
    // The first members of the array take no comma before them.
    const lead = shard > 0 && members;
    const skip = (part: PartIndex['identity']) => (shard === 0 || lead ? 0 : part.lead);
    // Each range names the version its index describes: a part replaced since is never joined.
    identity.push({ key: key(index.identity.key), start: skip(index.identity), end: index.identity.bytes, etag: index.identity.etag });
    gzip.push({ key: key(index.gzip.key), start: skip(index.gzip), end: index.gzip.bytes, etag: index.gzip.etag });
    if (lead) [crc, length] = [crc32Combine(crc, LEAD_CRC, 1), length + 1];
    [crc, length] = [length === 0 ? index.crc : crc32Combine(crc, index.crc, index.length), length + index.length];
    members ||= index.memberBytes > 0;
  }
  if (indexes[0]!.identity.bytes === 0)
    throw shardLayoutError(`${remote.where}: shard 0's part has no envelope head`, 'publish shard 0 again');
  const tail = Buffer.from(`]${envelopeTail(joinedMeta(indexes))}`);
  [crc, length] = [crc32Combine(crc, crc32(tail), tail.length), length + tail.length];
  identity.push({ bytes: tail });
  gzip.push({ bytes: Buffer.concat([deflatePiece(tail, undefined, true), gzipTrailer(crc, length)]) });
  return { identity, gzip };
}

function joinedMeta(indexes: readonly PartIndex[]) {
  const timestamp = indexes
    .map((index) => index.meta.timestamp)
    .sort()
    .at(-1)!;
  const executionTimeMs = Math.max(...indexes.map((index) => index.meta.executionTimeMs));
  return { timestamp, version: API_VERSION, executionTimeMs } as const;
}

/** R2 wants every part but the last of one size (compose-plan.ts); other stores take S3's rules. */
function partRules(remote: Remote): PartRules {
  const host = remote.options.endpoint === undefined ? '' : new URL(remote.options.endpoint).hostname;
  const equal = remote.options.equalParts ?? host.endsWith('.r2.cloudflarestorage.com');
  return equal ? r2PartRules(S3_PART_RULES.minPartBytes) : S3_PART_RULES;
}

function sum(results: readonly ComposeResult[]): Pick<JoinReport, 'copiedParts' | 'uploadedParts' | 'uploadedBytes'> {
  return {
    copiedParts: results.reduce((n, r) => n + r.copiedParts, 0),
    uploadedParts: results.reduce((n, r) => n + r.uploadedParts, 0),
    uploadedBytes: results.reduce((n, r) => n + r.uploadedBytes, 0),
  };
}

/** The shards whose part objects (as their indexes name them) are gone or replaced. */
async function brokenShards(remote: Remote, indexes: readonly PartIndex[]): Promise<number[]> {
  const broken = await Promise.all(indexes.map(async (index) => (await brokenObjects(remote, index)).length > 0));
  return broken.flatMap((yes, shard) => (yes ? [shard] : []));
}

function brokenError(remote: Remote, count: number, broken: readonly number[]) {
  const names = broken.map((shard) => `${shard}/${count}`).join(', ');
  return partMissingError(
    `the creators list of ${remote.where} cannot be joined: the part of ${plural(broken.length, 'shard')} (${names}) is gone from the bucket or was replaced; the live list was left as it is`,
    `publish ${broken.length === 1 ? 'that shard' : 'those shards'} again (profile-snapshot publish --shard i/${count}): a shard sends its part again when the bucket lacks it`,
  );
}

function missingError(remote: Remote, count: number, missing: readonly number[]) {
  const names = missing.map((shard) => `${shard}/${count}`).join(', ');
  return partMissingError(
    `the creators list of ${remote.where} cannot be joined: ${plural(missing.length, 'shard')} (${names}) published no part yet; the live list was left as it is`,
    `publish ${missing.length === 1 ? 'that shard' : 'those shards'} (profile-snapshot publish --shard i/${count}), then compose again`,
  );
}

export interface ComposeOptions {
  remote: RemoteOptions;
  /** The shard count the prefix must have (exit 9 otherwise); undefined: whatever its layout says. */
  shards?: number | undefined;
  /** Join even when the live list already holds every current part. */
  force?: boolean | undefined;
  /** How long to wait for another composer (default DEFAULT_LOCK_TIMEOUT_MS), then exit 8. */
  lockTimeoutMs?: number | undefined;
  leaseTtlMs?: number | undefined;
  singleWriter?: boolean | undefined;
}

export interface ComposeReport extends JoinReport {
  where: string;
  shards: number;
  requests: RequestCounts;
  seconds: number;
}

/**
 * `compose`: joins the creators list of a sharded prefix from every shard's part, as each shard's
 * publish does after writing its part; fails (exit 11) while a shard has no part yet.
 */
export async function compose(options: ComposeOptions): Promise<ComposeReport> {
  const started = performance.now();
  const remote = await Remote.open(options.remote);
  try {
    const shards = await readShardCount(remote);
    if (shards === undefined) {
      throw shardLayoutError(
        `${remote.where} is not a sharded prefix: no shard was published there`,
        'publish the shards first (profile-snapshot publish --shard i/n)',
      );
    }
    if (options.shards !== undefined && options.shards !== shards) {
      throw shardCountError(`${remote.where} is split into ${shards} shards, not ${options.shards}`, `pass --shards ${shards}`);
    }
    const lease = { ttlMs: options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS, singleWriter: Boolean(options.singleWriter), holder: thisHolder() };
    const waitMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
    const report = await joinList(remote, { count: shards, lease, waitMs, required: true, force: options.force });
    return { ...report, where: remote.where, shards, requests: { ...remote.counts }, seconds: (performance.now() - started) / 1000 };
  } finally {
    remote.close();
  }
}
