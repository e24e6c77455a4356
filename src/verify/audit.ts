/**
 * The audit behind `profile-snapshot verify`: reads a built tree (never writes it) and lists every
 * defect that would make a deploy of it break the contract, each with the path it concerns and a
 * message saying what is wrong and why it matters. One check per kind of defect, each in its module.
 *
 * One pass over the tree: the users folders are listed once; each profile is read once (an alias
 * that is a hard link to it, as build writes them, is not read again), parsed and validated once, on
 * two threads for large trees (./parallel.ts); the creators list is streamed, never held as one
 * string. What the list needs from the profiles is kept as one number per profile.
 */
import { lstatSync } from 'node:fs';
import { describeCause, outputError } from '../core/errors.js';
import { checkCreatorsList } from './creators-check.js';
import { startGzipCheck } from './gzip-check.js';
import { Findings, type Defect } from './defects.js';
import { checkContract, checkErrorDocuments } from './documents-check.js';
import { checkManifest } from './manifest-check.js';
import { checkNetlify } from './netlify-check.js';
import { checkProfileFolders } from './profile-folders.js';
import { checkShard } from './shard-check.js';
import type { Slice } from '../core/slice.js';
import { walkTree } from './tree-walk.js';

export interface AuditOptions {
  /** Also check Netlify's per-folder limit and the committed netlify.toml. */
  netlify?: boolean;
  /** Repository root holding netlify.toml (for `netlify`). Default: the working directory. */
  root?: string;
  /** Whether a live profile-snapshot process holds the out dir's lock (a build or a watcher). */
  writerActive?: boolean;
  /** Audit profiles on two threads when the tree is large (default true; see ./parallel.ts). */
  parallel?: boolean;
  /** The shard the tree must be (`--shard`); a shard's tree is checked for other shards' users either way. */
  shard?: Slice | undefined;
}

export interface AuditResult {
  defects: Defect[];
  /** Not defects: e.g. a folder near Netlify's limit. */
  warnings: string[];
  profiles: number;
  creators: number;
  /** Files of the tree outside dot folders (what a deploy uploads). */
  files: number;
  /** Manifest entries marked pending (a commit in progress, or interrupted). */
  pending: number;
  /** Threads the profile pass ran on. */
  threads: number;
}

/** Audits the out dir (absolute). */
export function audit(out: string, options: AuditOptions = {}): AuditResult {
  checkIsFolder(out);
  const findings = new Findings();
  const tree = walkTree(out, options.writerActive, findings);
  const gzip = startGzipCheck(out);
  const folders = checkProfileFolders(out, tree.users, options.parallel, findings);
  const creators = checkCreatorsList(out, folders.profiles, findings);
  checkShard(out, folders.profiles, options.shard, findings);
  gzip.finish(findings);
  checkErrorDocuments(out, findings);
  checkContract(out, findings);
  const pending = checkManifest(out, folders, options.writerActive, findings);
  if (options.netlify) checkNetlify(tree.counts, options.root, findings);
  const { defects, warnings } = findings;
  return {
    defects,
    warnings,
    profiles: folders.profiles.size,
    creators,
    files: tree.files + folders.files,
    pending,
    threads: folders.threads,
  };
}

function checkIsFolder(out: string): void {
  let stats;
  try {
    stats = lstatSync(out);
  } catch (cause) {
    throw outputError(
      `cannot read the out dir ${out}: ${describeCause(cause)}`,
      'build the snapshot first (profile-snapshot build --out <dir>)',
      cause,
    );
  }
  if (!stats.isDirectory() && !stats.isSymbolicLink())
    throw outputError(`${out} is not a folder`, 'give the out dir of a build with --out');
}
