/**
 * The audit's first check: the tree itself, every folder read once. Users folders are handed to
 * the profile check; everything else is checked here for files a deploy must not carry (bookkeeping,
 * leftovers, stray files under the API's prefixes or among the error documents).
 */
import { readdirSync, type Dirent } from 'node:fs';
import { basename, join } from 'node:path';
import { describeCause, outputError } from '../core/errors.js';
import { plural } from '../core/text.js';
import { ERRORS_DIR, LOCK_FILE, MANIFEST_FILE, PROFILE_DIRS, STAGING_DIR, STATE_DIR, STATUS_FILE } from '../core/layout.js';
import { ROUTES } from '../hosting/routes/routes.js';
import { API_DOCUMENTS, ERROR_FILES } from './documents-check.js';
import type { Findings } from './defects.js';

/** Names of the tool's own files and staging folder, which must never stand outside its state folder. */
const BOOKKEEPING_FILES = new Set([MANIFEST_FILE, LOCK_FILE, STATUS_FILE].map((file) => basename(file)));
const STAGING_NAME = basename(STAGING_DIR);
const BOOKKEEPING_LIST = [...BOOKKEEPING_FILES, STAGING_NAME].join(', ');
const TEMPORARY = /\.(tmp|stale)$/;

export interface TreeWalk {
  /** The entries of each users folder, for the profile check. */
  users: Map<string, Dirent[]>;
  /** Visible entries per folder (Netlify's per-folder limit). */
  counts: { dir: string; entries: number }[];
  /** Files outside dot folders and users folders. */
  files: number;
}

/** Walks the out dir (absolute); `writerActive`: a live profile-snapshot process holds it. */
export function walkTree(out: string, writerActive: boolean | undefined, findings: Findings): TreeWalk {
  const walk: TreeWalk = { users: new Map(), counts: [], files: 0 };
  const visit = (rel: string): void => {
    const entries = readDir(out, rel);
    walk.counts.push({ dir: rel === '' ? '.' : rel, entries: entries.filter((e) => !e.name.startsWith('.')).length });
    if ((PROFILE_DIRS as readonly string[]).includes(rel)) {
      walk.users.set(rel, entries);
      return;
    }
    for (const e of entries) {
      const path = rel === '' ? e.name : `${rel}/${e.name}`;
      if (rel === '' && e.name === STATE_DIR) {
        if (e.isDirectory()) checkStateDir(out, writerActive, findings);
      } else if (!e.name.startsWith('.')) {
        // Dot files and folders are neither deployed (Netlify skips them) nor served (serve refuses them).
        if (e.isDirectory() && !isBookkeeping(e)) visit(path);
        else checkEntry(path, e, walk, findings);
      }
    }
  };
  visit('');
  return walk;
}

function isBookkeeping(e: Dirent): boolean {
  return BOOKKEEPING_FILES.has(e.name) || (e.name === STAGING_NAME && e.isDirectory());
}

const underApi = (rel: string) => ROUTES.prefixes.some((p) => rel.startsWith(`${p.slice(1)}/`));

/** A file (or bookkeeping folder) outside the state folder and the users folders. */
function checkEntry(path: string, e: Dirent, walk: TreeWalk, findings: Findings): void {
  if (isBookkeeping(e)) {
    findings.defect(
      'bookkeeping',
      path,
      `${e.isDirectory() ? 'folder' : 'file'} named like the tool's bookkeeping (${BOOKKEEPING_LIST}) outside ${STATE_DIR}/: it would be deployed and served; remove it (the tool keeps these in ${STATE_DIR}/ only)`,
    );
    return;
  }
  walk.files++;
  if (TEMPORARY.test(e.name)) {
    findings.defect('leftover', path, 'temporary file left by an interrupted write: it would be deployed and served; remove it');
  } else if (e.isSymbolicLink() && (underApi(path) || path.startsWith(`${ERRORS_DIR}/`))) {
    findings.defect(
      'stray',
      path,
      'a symbolic link where the API is served: Netlify deploys do not follow symbolic links; profile-snapshot never writes one',
    );
  } else if (underApi(path) && !API_DOCUMENTS.has(path)) {
    findings.defect(
      'stray',
      path,
      'not a document of the API, but under an API prefix: it would be served where the contract answers 404 NOT_FOUND; remove it',
    );
  } else if (path.startsWith(`${ERRORS_DIR}/`) && !ERROR_FILES.has(path)) {
    findings.defect('stray', path, `not one of the error documents, but in the tool's ${ERRORS_DIR}/ folder: remove it`);
  }
}

/** Leftovers in the state folder: staged files of an interrupted build, temporary files. */
function checkStateDir(out: string, writerActive: boolean | undefined, findings: Findings): void {
  for (const e of readDir(out, STATE_DIR)) {
    const path = `${STATE_DIR}/${e.name}`;
    if (path === STAGING_DIR && e.isDirectory()) {
      const staged = readDir(out, STAGING_DIR);
      if (staged.length > 0 && !writerActive) {
        const shown = staged
          .slice(0, 3)
          .map((s) => s.name)
          .join(', ');
        findings.defect(
          'leftover',
          STAGING_DIR,
          `${plural(staged.length, 'staged file')} (${shown}${staged.length > 3 ? ', ...' : ''}) left by an interrupted build (no profile-snapshot process holds the out dir); the next build clears them`,
        );
      }
    } else if (TEMPORARY.test(e.name) && !writerActive) {
      // Never served or deployed, and a later run replaces it: worth a word, not a refused deploy.
      findings.warn(
        `${path}: temporary file left by an interrupted run (harmless: the state folder is never served or deployed); remove it`,
      );
    }
  }
}

function readDir(out: string, rel: string): Dirent[] {
  try {
    return readdirSync(join(out, rel), { withFileTypes: true });
  } catch (cause) {
    throw outputError(`cannot read ${join(out, rel)}: ${describeCause(cause)}`, "check the out dir's permissions", cause);
  }
}
