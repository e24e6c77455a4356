/**
 * The audit behind `profile-snapshot verify`: reads a built tree (never writes it) and lists every
 * defect that would make a deploy of it break the contract, each with the path it concerns and a
 * message saying what is wrong and why it matters.
 *
 * One pass over the tree: the users folders are listed once; each profile is read once (an alias
 * that is a hard link to it, as build writes them, is not read again), parsed and validated once, on
 * two threads for large trees (./parallel.ts); the creators list is streamed, never held as one
 * string. What the list needs from the profiles is kept as one number per profile.
 */
import { lstatSync, readdirSync, readFileSync, type Dirent } from 'node:fs';
import { join, resolve } from 'node:path';
import { describeCause, outputError } from '../core/errors.js';
import { classifyFolders, NETLIFY_MAX_FILES_PER_DIR, nearLimitMessage } from '../hosting/limits.js';
import { NETLIFY_TOML, renderNetlifyToml } from '../hosting/netlify-config.js';
import { ROUTES } from '../hosting/routes.js';
import { CREATORS_FILE, ERRORS_DIR, MANIFEST_FILE, OPENAPI_FILE, PROFILE_DIRS, STAGING_DIR, STATE_DIR, errorFile } from '../core/layout.js';
import { PENDING, readManifest, type Manifest } from '../publish/manifest.js';
import { ERRORS, type ErrorCode } from '../render/documents.js';
import { isPublishableUsername } from '../render/user.js';
import { contractText } from '../core/contract.js';
import { JsonStreamError, parseElement, scanEnvelope } from './json-stream.js';
import { profilePass } from './parallel.js';
import { ABSENT, ACTIVE, canonicalKey, FILE, fingerprint, FOLDER, has, OTHER, SEEN, SYMLINK, userKey, VALID } from './profiles.js';
import { describeErrors, validator } from './schemas.js';

export const DEFECT_KINDS = {
  unparseable: 'a document that is not well-formed JSON',
  schema: 'a document that does not match its JSON Schema (contract/openapi.json)',
  'alias-differs': 'a profile whose alias files differ',
  'alias-missing': 'a profile that is missing under one alias folder',
  'creators-unknown': 'a creators list entry without a profile',
  'creators-status': 'a creators list entry whose status is not active',
  'creators-order': 'a creators list entry out of order (lower-cased username, ascending) or repeated',
  'creators-differs': 'a creators list entry that differs from its profile',
  'creators-missing': 'an active profile that the creators list does not name',
  unpublishable: 'a published profile whose username is not publishable',
  'file-name': 'a profile file whose name is not the lower-cased username inside it',
  missing: 'a document every snapshot must have (error documents, creators list, contract)',
  'error-document': 'an error document holding another error than its file name says',
  contract: 'a published contract that differs from this version\'s contract/openapi.json',
  leftover: 'a temporary or staging file left by an interrupted run',
  bookkeeping: 'the tool\'s bookkeeping where it would be served (outside .profile-snapshot/)',
  stray: 'a file where the API would serve it that is not a document of the API',
  manifest: 'the tool\'s manifest disagrees with the tree (an interrupted build)',
  'netlify-folder-limit': 'a folder with more files than Netlify deploys (--netlify)',
  'netlify-config': 'netlify.toml differs from what the route table renders (--netlify)',
} as const;
export type DefectKind = keyof typeof DEFECT_KINDS;

export interface Defect {
  kind: DefectKind;
  /** Relative to the out dir (or, for netlify-config, to the repository root). */
  path: string;
  message: string;
}

export interface AuditOptions {
  /** Also check Netlify's per-folder limit and the committed netlify.toml. */
  netlify?: boolean;
  /** Repository root holding netlify.toml (for `netlify`). Default: the working directory. */
  root?: string;
  /** Whether a live profile-snapshot process holds the out dir's lock (a build or a watcher). */
  writerActive?: boolean;
  /** Audit profiles on two threads when the tree is large (default true; see ./parallel.ts). */
  parallel?: boolean;
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

const BOOKKEEPING_NAMES = new Set(['manifest', 'lock', 'status.json']);
const TEMPORARY = /\.(tmp|stale)$/;
const ERROR_FILES = new Map((Object.keys(ERRORS) as ErrorCode[]).map((code) => [errorFile(code), code]));
const API_DOCUMENTS = new Set([CREATORS_FILE, OPENAPI_FILE]);
const USERNAME_HEAD = Buffer.from('{"username":"');
/** The username of a list entry written by build (its first member), without parsing it; else undefined. */
function quickUsername(raw: Buffer): string | undefined {
  if (!raw.subarray(0, USERNAME_HEAD.length).equals(USERNAME_HEAD)) return undefined;
  const end = raw.indexOf(0x22, USERNAME_HEAD.length);
  if (end === -1 || end - USERNAME_HEAD.length > 64) return undefined;
  const name = raw.toString('latin1', USERNAME_HEAD.length, end);
  return isPublishableUsername(name) ? name : undefined;
}

export function audit(outDir: string, options: AuditOptions = {}): AuditResult {
  const out = resolve(outDir);
  const defects: Defect[] = [];
  const warnings: string[] = [];
  const defect = (kind: DefectKind, path: string, message: string) => defects.push({ kind, path, message });
  let stats;
  try {
    stats = lstatSync(out);
  } catch (cause) {
    throw outputError(`cannot read the out dir ${outDir}: ${describeCause(cause)}`, 'build the snapshot first (profile-snapshot build --out <dir>)', cause);
  }
  if (!stats.isDirectory() && !stats.isSymbolicLink()) throw outputError(`${outDir} is not a folder`, 'give the out dir of a build with --out');

  // ---- 1. The tree: every folder once; users folders are kept for the profile pass.
  const users = new Map<string, Dirent[]>();
  const counts: { dir: string; entries: number }[] = [];
  let files = 0;
  let threads = 1;
  const apiPrefixes = ROUTES.prefixes.map((p) => p.slice(1));
  const underApi = (rel: string) => apiPrefixes.some((p) => rel.startsWith(`${p}/`));
  const readDir = (rel: string): Dirent[] => {
    try {
      return readdirSync(join(out, rel), { withFileTypes: true });
    } catch (cause) {
      throw outputError(`cannot read ${join(outDir, rel)}: ${describeCause(cause)}`, 'check the out dir\'s permissions', cause);
    }
  };
  const walk = (rel: string) => {
    const entries = readDir(rel);
    const visible = entries.filter((e) => !e.name.startsWith('.'));
    counts.push({ dir: rel === '' ? '.' : rel, entries: visible.length });
    if ((PROFILE_DIRS as readonly string[]).includes(rel)) {
      users.set(rel, entries);
      return;
    }
    for (const e of entries) {
      const path = rel === '' ? e.name : `${rel}/${e.name}`;
      if (rel === '' && e.name === STATE_DIR) {
        if (e.isDirectory()) auditStateDir();
        continue;
      }
      // Dot files and folders are neither deployed (Netlify skips them) nor served (serve refuses them).
      if (e.name.startsWith('.')) continue;
      if (BOOKKEEPING_NAMES.has(e.name) || (e.name === 'staging' && e.isDirectory())) {
        defect('bookkeeping', path, `${e.isDirectory() ? 'folder' : 'file'} named like the tool's bookkeeping (${MANIFEST_FILE}, lock, status.json, staging) outside ${STATE_DIR}/: it would be deployed and served; remove it (the tool keeps these in ${STATE_DIR}/ only)`);
        continue;
      }
      if (e.isDirectory()) {
        walk(path);
        continue;
      }
      files++;
      if (TEMPORARY.test(e.name)) {
        defect('leftover', path, 'temporary file left by an interrupted write: it would be deployed and served; remove it');
        continue;
      }
      if (e.isSymbolicLink() && (underApi(path) || path.startsWith(`${ERRORS_DIR}/`))) {
        defect('stray', path, 'a symbolic link where the API is served: Netlify deploys do not follow symbolic links; profile-snapshot never writes one');
        continue;
      }
      if (underApi(path) && !API_DOCUMENTS.has(path)) {
        defect('stray', path, 'not a document of the API, but under an API prefix: it would be served where the contract answers 404 NOT_FOUND; remove it');
      } else if (path.startsWith(`${ERRORS_DIR}/`) && !ERROR_FILES.has(path)) {
        defect('stray', path, `not one of the error documents, but in the tool's ${ERRORS_DIR}/ folder: remove it`);
      }
    }
  };

  const auditStateDir = () => {
    const entries = readDir(STATE_DIR);
    for (const e of entries) {
      const path = `${STATE_DIR}/${e.name}`;
      if (path === STAGING_DIR && e.isDirectory()) {
        const staged = readDir(STAGING_DIR);
        if (staged.length > 0 && !options.writerActive) {
          const shown = staged.slice(0, 3).map((s) => s.name).join(', ');
          defect('leftover', STAGING_DIR, `${staged.length} staged file${staged.length === 1 ? '' : 's'} (${shown}${staged.length > 3 ? ', ...' : ''}) left by an interrupted build (no profile-snapshot process holds the out dir); the next build clears them`);
        }
      } else if (TEMPORARY.test(e.name) && !options.writerActive) {
        // Never served or deployed, and a later run replaces it: worth a word, not a refused deploy.
        warnings.push(`${path}: temporary file left by an interrupted run (harmless: the state folder is never served or deployed); remove it`);
      }
    }
  };

  walk('');

  // ---- 2. Profiles: both aliases of every name.
  const profiles = new Map<string, number>();
  const firstDir = PROFILE_DIRS[0];
  const byDir = PROFILE_DIRS.map((dir) => {
    const map = new Map<string, Dirent>();
    for (const e of users.get(dir) ?? []) if (!e.name.startsWith('.')) map.set(e.name, e);
    return map;
  });
  const names = new Set<string>(byDir[0]!.keys());
  for (const map of byDir.slice(1)) for (const name of map.keys()) names.add(name);
  const nameList = [...names];
  const types = new Uint8Array(nameList.length * PROFILE_DIRS.length);
  nameList.forEach((name, n) => {
    byDir.forEach((map, d) => {
      const e = map.get(name);
      types[n * PROFILE_DIRS.length + d] = e === undefined ? ABSENT : e.isFile() ? FILE : e.isDirectory() ? FOLDER : e.isSymbolicLink() ? SYMLINK : OTHER;
    });
  });
  const pass = profilePass(out, nameList, types, { parallel: options.parallel });
  defects.push(...pass.defects);
  files += pass.files;
  threads = pass.threads;
  pass.names.forEach((name, i) => profiles.set(name, pass.keys[i]!));

  // ---- 3. The creators list, streamed.
  let creators = 0;
  const listPath = join(out, CREATORS_FILE);
  let listReadable = false;
  if (!fileExists(listPath)) {
    defect('missing', CREATORS_FILE, 'the creators list (operation 2) is missing: /service-api/v1/creators would answer 404');
  } else {
    const userValidator = validator('User');
    let previous: string | undefined;
    const checkOrder = (lower: string, label: string) => {
      if (previous !== undefined && !(previous < lower)) {
        defect('creators-order', CREATORS_FILE, previous === lower
          ? `${label} repeats the username ${JSON.stringify(lower)} (ignoring case): each creator appears once`
          : `${label} comes after ${JSON.stringify(previous)}: the list must be ordered by lower-cased username, ascending`);
      }
      previous = lower;
    };
    try {
      const scan = scanEnvelope(listPath, (raw, index, offset) => {
        creators++;
        // Fast path: the entry's bytes are those of a valid profile's data (how build writes it).
        const quick = quickUsername(raw);
        if (quick !== undefined) {
          const lower = quick.toLowerCase();
          const key = profiles.get(lower);
          if (key !== undefined && has(key, VALID) && has(key, ACTIVE) && fingerprint(key) === userKey(raw)) {
            checkOrder(lower, `entry ${index} (${JSON.stringify(quick)})`);
            if (!has(key, SEEN)) profiles.set(lower, key + SEEN);
            return;
          }
        }
        const entry = parseElement(raw, offset) as any;
        const username: unknown = entry?.username;
        const label = `entry ${index}${typeof username === 'string' ? ` (${JSON.stringify(username)})` : ''}`;
        if (!userValidator(entry)) defect('schema', CREATORS_FILE, `${label} does not match User: ${describeErrors(userValidator.errors, `/data/${index}`)}`);
        if (entry?.status !== 'active') {
          defect('creators-status', CREATORS_FILE, `${label} has status ${JSON.stringify(entry?.status)}: only active users belong in the creators list (suspended, banned, inactive and deleted accounts never appear)`);
        }
        if (typeof username !== 'string') return;
        const lower = username.toLowerCase();
        checkOrder(lower, label);
        const key = profiles.get(lower);
        if (key === undefined) {
          defect('creators-unknown', CREATORS_FILE, `${label} has no profile (${firstDir}/${lower} is missing or broken): the list names a user that answers 404`);
          return;
        }
        if (!has(key, SEEN)) profiles.set(lower, key + SEEN);
        if (fingerprint(key) !== userKey(raw) && fingerprint(key) !== canonicalKey(entry)) {
          defect('creators-differs', CREATORS_FILE, `${label} differs from its profile ${firstDir}/${lower}: both come from one snapshot and must hold the same User object`);
        }
      });
      listReadable = true;
      const envelope = Object.fromEntries(scan.members);
      if (scan.dataArray) envelope.data = [];
      const listValidator = validator('CreatorsResponse');
      if (!listValidator(envelope)) defect('schema', CREATORS_FILE, `does not match CreatorsResponse: ${describeErrors(listValidator.errors)}`);
    } catch (cause) {
      if (!(cause instanceof JsonStreamError)) throw cause;
      defect('unparseable', CREATORS_FILE, `does not parse as JSON (${cause.message}): a truncated or corrupted creators list`);
    }
    if (listReadable) {
      for (const [name, key] of profiles) {
        if (has(key, ACTIVE) && !has(key, SEEN)) {
          defect('creators-missing', CREATORS_FILE, `does not name the active profile ${JSON.stringify(name)} (${firstDir}/${name}): every active user belongs in the list`);
        }
      }
    }
  }

  // ---- 4. Error documents and the published contract.
  const errorValidator = validator('ErrorResponse');
  for (const [path, code] of ERROR_FILES) {
    const bytes = readIfFile(join(out, path));
    if (bytes === undefined) {
      defect('missing', path, `the ${ERRORS[code].code} error document is missing: the hosting rules answer ${ERRORS[code].status} with this file, and would answer the CDN's own page instead`);
      continue;
    }
    let doc: any;
    try {
      doc = JSON.parse(bytes.toString('utf8'));
    } catch (cause) {
      defect('unparseable', path, `does not parse as JSON (${describeCause(cause)})`);
      continue;
    }
    if (!errorValidator(doc)) defect('schema', path, `does not match ErrorResponse: ${describeErrors(errorValidator.errors)}`);
    const error = doc?.error;
    if (error?.code !== ERRORS[code].code || error?.status !== ERRORS[code].status) {
      defect('error-document', path, `holds ${JSON.stringify(error?.status)} ${JSON.stringify(error?.code)}, but this file answers ${ERRORS[code].status} ${ERRORS[code].code}`);
    }
  }
  const published = readIfFile(join(out, OPENAPI_FILE));
  if (published === undefined) {
    defect('missing', OPENAPI_FILE, 'the contract (OpenAPI document) is missing: build publishes contract/openapi.json there');
  } else if (!published.equals(Buffer.from(contractText()))) {
    let parses = true;
    try { JSON.parse(published.toString('utf8')); } catch { parses = false; }
    defect(parses ? 'contract' : 'unparseable', OPENAPI_FILE, parses
      ? 'differs from the contract of this profile-snapshot version (contract/openapi.json): clients would generate code from another contract; rebuild'
      : 'does not parse as JSON: a truncated or corrupted contract; rebuild');
  }

  // ---- 5. The manifest: what the last build says it wrote.
  let manifest: Manifest | undefined;
  let pending = 0;
  try {
    manifest = readManifest(out);
  } catch (cause) {
    defect('manifest', MANIFEST_FILE, `${describeCause(cause)}`);
  }
  if (manifest) {
    for (const [name, hash] of manifest.profiles) {
      if (hash === PENDING) pending++;
      else if (!names.has(name)) defect('manifest', `${firstDir}/${name}`, `listed in the manifest as published by the last build, but missing under every alias folder`);
    }
    for (const [path, hash] of manifest.files) {
      if (hash === PENDING) pending++;
      // Missing documents the checks above know are reported there.
      else if (!ERROR_FILES.has(path) && !API_DOCUMENTS.has(path) && !fileExists(join(out, path))) {
        defect('manifest', path, 'listed in the manifest as written by the last build, but missing');
      }
    }
    if (pending > 0 && !options.writerActive) {
      defect('manifest', MANIFEST_FILE, `${pending} entr${pending === 1 ? 'y is' : 'ies are'} pending: a build was interrupted while publishing, so files may be half-way between two snapshots; run build again`);
    }
    if (manifest.profiles.size > 0 || manifest.files.size > 0) {
      for (const name of names) {
        if (!manifest.profiles.has(name)) {
          for (const dir of PROFILE_DIRS) {
            if (byDir[PROFILE_DIRS.indexOf(dir)]!.get(name)?.isFile()) {
              defect('stray', `${dir}/${name}`, 'in a users folder but not written by profile-snapshot (not in its manifest): it is served as a profile, though the store did not publish it');
            }
          }
        }
      }
    }
  }

  // ---- 6. Netlify.
  if (options.netlify) {
    const { over, near } = classifyFolders(counts);
    for (const c of over) {
      defect('netlify-folder-limit', c.dir, `holds ${c.entries.toLocaleString('en-US')} files, over Netlify's limit of ${NETLIFY_MAX_FILES_PER_DIR.toLocaleString('en-US')} per folder: the deploy would fail; serve this snapshot with profile-snapshot serve behind a CDN instead`);
    }
    warnings.push(...near.map(nearLimitMessage));
    // netlify.toml only: the edge routing module embeds compiled function source, which `netlify
    // config --check` compares (in CI), while this audit may run from sources (the test suites).
    const root = resolve(options.root ?? '.');
    const bytes = readIfFile(join(root, NETLIFY_TOML));
    if (bytes === undefined) {
      defect('netlify-config', NETLIFY_TOML, `missing in ${root}: Netlify would deploy without the rules, headers and edge function the route table renders; run profile-snapshot netlify config and commit the result`);
    } else if (bytes.toString('utf8') !== renderNetlifyToml()) {
      defect('netlify-config', NETLIFY_TOML, 'differs from what the route table (src/hosting/routes.ts) renders: the deployed rules or headers would not be the contract\'s; run profile-snapshot netlify config and commit the result');
    }
  }

  return { defects, warnings, profiles: profiles.size, creators, files, pending, threads };
}

function fileExists(path: string): boolean {
  try {
    return lstatSync(path).isFile();
  } catch {
    return false;
  }
}

function readIfFile(path: string): Buffer | undefined {
  if (!fileExists(path)) return undefined;
  return readFileSync(path);
}
