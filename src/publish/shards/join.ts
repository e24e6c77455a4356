/**
 * The creators list of a sharded prefix, joined in the bucket from every shard's part (part.ts):
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
 * times (the shards ran side by side), so joining the same parts gives the same bytes
 * (list-sources.ts makes the sources and the tail).
 */
import { partMissingError, remoteError } from '../../core/errors.js';
import { CREATORS_FILE, CREATORS_GZIP_FILE } from '../../core/layout.js';
import { limitTo } from '../../core/limit.js';
import type { Slice } from '../../core/slice.js';
import { plural } from '../../core/text.js';
import type { Remote } from '../bucket/client.js';
import type { Later } from '../bucket/later.js';
import { prepareComposition, versionOf, type ComposeResult } from '../bucket/compose.js';
import { readObject, unchangedSince, writeObject } from '../bucket/objects.js';
import { partRulesOf } from '../bucket/stores.js';
import { objectKey } from '../bucket/target.js';
import { JOINED } from '../keys.js';
import { Lease, type LeaseOptions } from '../lease/lease.js';
import { LIST_FILES } from '../plan/plan.js';
import { listSources } from './list-sources.js';
import { brokenObjects, readPartIndex, removeOldParts, type PartIndex } from './part.js';

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
  const plan = listSources(remote.options.prefix, remote.where, indexes);
  const rules = partRulesOf(remote.options.endpoint, remote.options.equalParts);
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
  options: Omit<JoinOptions, 'count' | 'required'> & { later: Later },
): Promise<{ report: JoinReport; holdsPart: boolean }> {
  const [current, last] = await Promise.all([readPartIndex(remote, shard), readJoined(remote)]);
  if (current !== undefined && last?.parts?.[shard.index] === current.id) {
    return { report: { ...NOTHING_JOINED, missing: [], parts: last.parts }, holdsPart: true };
  }
  const report = await joinList(remote, { ...options, count: shard.count, required: false });
  const holdsPart = current !== undefined && report.parts?.[shard.index] === current.id;
  if (holdsPart) await removeOldParts(remote, shard, current, options.later);
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
