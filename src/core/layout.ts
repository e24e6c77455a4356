/**
 * Where everything lives under the out dir: the documents, and the tool's own bookkeeping. The
 * hosting route table, verify, publish and the watcher read these, so a path is spelled in exactly
 * one place. The out dir itself is made absolute once, by `resolveOutDir`, where options come in.
 */
import { resolve } from 'node:path';

/** The out dir as every module below the entry points takes it: absolute. */
export function resolveOutDir(out: string): string {
  return resolve(out);
}

/** The out dir when none is given: the folder Netlify publishes, too. */
export const DEFAULT_OUT_DIR = 'dist';

/**
 * A profile's file name: a publishable username (docs/store.md: 1-64 of A-Z a-z 0-9 . _ -,
 * not starting with ".") in lower case. The route table and the output tree both rely on it: it can
 * never be a path other than one file in a users folder.
 */
export const CANONICAL_USERNAME = /^[a-z0-9_-][a-z0-9._-]{0,63}$/;

/** Each published profile is written, byte-identical, under every alias folder. */
export const PROFILE_DIRS = ['api/v1/users', 'service-api/v1/users'] as const;

export const CREATORS_FILE = 'service-api/v1/creators';
/**
 * The creators list compressed (gzip), for hosts to send to clients that accept it. A dot file, so
 * no host ever serves it under a path of its own: the route table never resolves to it, the origin
 * server refuses dot paths, and Netlify's deploy skips dot files (Netlify compresses by itself).
 */
export const CREATORS_GZIP_FILE = gzipVariantPath(CREATORS_FILE);

/** Where a document's gzip variant is kept: beside it, as a dot file (`x` -> `.x.gz`). */
export function gzipVariantPath(path: string): string {
  const slash = path.lastIndexOf('/');
  return `${path.slice(0, slash + 1)}.${path.slice(slash + 1)}.gz`;
}

/** Where `build` publishes the contract (contract/openapi.json), served at /api/v1/openapi.json. */
export const OPENAPI_FILE = 'api/v1/openapi.json';

/** Error documents sit outside the users folders so a username can never collide with one. */
export const ERRORS_DIR = '_errors';
/** An error document's file, e.g. USER_NOT_FOUND -> _errors/user-not-found.json. */
export function errorFile(code: string): string {
  return `${ERRORS_DIR}/${code.toLowerCase().replaceAll('_', '-')}.json`;
}

/**
 * The tool's own bookkeeping (manifest, staging area, lock, status). A dot folder: the origin server
 * refuses dot paths and Netlify's deploy skips them, so it is never served or uploaded.
 */
export const STATE_DIR = '.profile-snapshot';
export const MANIFEST_FILE = `${STATE_DIR}/manifest`;
export const STAGING_DIR = `${STATE_DIR}/staging`;
/** The out dir's lock (output/lock.ts). */
export const LOCK_FILE = `${STATE_DIR}/lock`;
/** The record of the last pass (incremental/last-pass.ts). */
export const LAST_PASS_FILE = `${STATE_DIR}/last-pass.json`;
/** Where each piece of the creators list's gzip variant sits in it (output/creators-gzip.ts). */
export const CREATORS_GZIP_INDEX_FILE = `${STATE_DIR}/creators-gzip-index`;
/** A generation of the tree pinned for the watcher's publish, while later commits go on (output/pin.ts). */
export const PIN_DIR = `${STATE_DIR}/pinned`;
/**
 * Large files the out dir lock's holder replaced, held until it writes their successors
 * (output/held-files.ts).
 */
export const HELD_DIR = `${STATE_DIR}/held`;
/** The watcher's health status (watch/status.ts). */
export const STATUS_FILE = `${STATE_DIR}/status.json`;
/** `regenerate --full` asks the watcher for a full, healing cycle: this file says so until that cycle succeeds. */
export const FULL_CYCLE_REQUEST_FILE = `${STATE_DIR}/full-cycle-requested`;
