/**
 * One build: a single pass over one consistent store snapshot, rendering each row and handing the
 * documents to the output transaction. Plain data in (BuildOptions), plain data out (BuildReport).
 */
import { performance } from 'node:perf_hooks';
import { normalizeBaseUrl } from './core/config.js';
import { StrictWarningsError } from './core/errors.js';
import { ERRORS, SUCCESS_HEAD, envelopeTail, errorBody, errorDocument, meta, successDocument, type ErrorCode } from './render/documents.js';
import { renderUser, type RowWarning } from './render/user.js';
import { Col, ProfileStore, type StoreRow } from './store/read.js';
import { CREATORS_FILE, errorFile, OPENAPI_FILE, PROFILE_DIRS, resolveOutDir } from './core/layout.js';
import { BUILD_NOTICE_PROFILES_PER_DIR, NETLIFY_MAX_FILES_PER_DIR } from './hosting/limits.js';
import { CreatorsList } from './publish/creators.js';
import { OutputTransaction, preloadManifest, type WriteCounts } from './publish/tree.js';
import { hasSignature, isUnsigned, listLength } from './publish/manifest.js';
import { fingerprint } from './core/hash.js';
import { OutDirLock } from './publish/lock.js';
import { contractText } from './core/contract.js';
import { currentPass, forgetPass, recordPass, type LastPass } from './publish/last-pass.js';
import { nextAgeChangeMs, parseStoreDate, wholeDaysBetween } from './render/dates.js';
import { rowSignature } from './render/signature.js';
import { toolIdentity } from './core/version.js';
import { collectIfGrown } from './core/memory.js';
import type { Selection, StoreSession } from './session.js';

export interface BuildOptions {
  db: string;
  out: string;
  /** Absolute http(s) URL without query or fragment (see normalizeBaseUrl). */
  baseUrl: string;
  /** Snapshot time, ms since the epoch (the wall clock, or SOURCE_DATE_EPOCH). */
  snapshotMs: number;
  /** Reproducible mode (SOURCE_DATE_EPOCH): executionTimeMs is written as 0 so bytes repeat exactly. */
  reproducible?: boolean;
  /** Any warning fails the build (exit 4) and nothing is written. */
  strict?: boolean;
  busyTimeoutMs?: number;
  /** Called now and then during the pass with the number of rows read so far. */
  onProgress?: (rowsRead: number) => void;
  /**
   * The out dir's lock when the caller already holds it (a watcher holds it for its whole life).
   * Otherwise the build takes it for its duration, so two builds, or a build and a watcher, never
   * write one tree at once; it waits up to `lockWaitMs` (default 5000) for a holder, then exits 5.
   */
  lock?: OutDirLock;
  /**
   * A notice is reported when a users folder holds more profiles than this (default 50,000): Netlify
   * refuses a deploy with more than 54,000 files in one folder.
   */
  folderNoticeAt?: number;
  lockWaitMs?: number;
  /**
   * Read every row even when the store is unchanged since the last build (by default such a build
   * reads nothing and writes nothing: see publish/last-pass.ts).
   */
  fullPass?: boolean;
  /** How long the store's files must have been left alone before their stamp is trusted (tests). */
  storeSettleMs?: number;
  /**
   * A long-lived reader (the watcher's) to use instead of opening the store: it remembers the last
   * pass, so a pass can read only the users whose rows changed since (see session.ts).
   */
  session?: StoreSession;
}

export interface BuildReport {
  out: string;
  snapshotTime: string;
  /** Profiles published (each under every alias). */
  profiles: number;
  /** Entries of the creators list. */
  creators: number;
  /** Rows with a publishable status that were not published (each has a warning). */
  skipped: number;
  /**
   * Rows rendered in this build. The others were kept as the last build published them, unrendered:
   * their row signature (every column, child row and the account age) had not changed, or (in a
   * session) the store's comparison with the last pass's snapshot found them unchanged.
   */
  rendered: number;
  /** Users read from the store: every candidate row, or (in a session) only those that changed. */
  rowsRead: number;
  files: WriteCounts;
  warnings: RowWarning[];
  /** Advice about the whole tree (not data warnings: never fatal, even under --strict). */
  notices: string[];
  seconds: number;
  /**
   * True when nothing was read: the store, the tool, the base URL and the tree are as the last
   * build left them and no published profile's age moved, so its output still stands as it is.
   */
  storeUnchanged: boolean;
}

const PROGRESS_EVERY = 10_000;

function folderNotices(profiles: number, noticeAt: number): string[] {
  if (profiles <= noticeAt) return [];
  return PROFILE_DIRS.map((dir) => `${dir} holds ${profiles.toLocaleString('en-US')} profiles: Netlify refuses a deploy with more than ${NETLIFY_MAX_FILES_PER_DIR.toLocaleString('en-US')} files in one folder (see "The 54,000-files-per-folder limit" in docs/hosting.md: past it, self-host with serve)`);
}

/** A session whose copy of the snapshot (store/shadow.ts) could not be kept says why. */
function copyNotices(store: ProfileStore, session: StoreSession | undefined): string[] {
  const notice = session ? store.shadow.failureNotice() : undefined;
  return notice === undefined ? [] : [notice];
}

/** The report of a build that found the last pass still standing: the same counts and warnings. */
function unchangedReport(last: LastPass, options: BuildOptions, outDir: string, started: number, extraNotices: string[]): BuildReport {
  // Under --strict the same rows fail the same way, and nothing is written either.
  if (options.strict && last.warnings.length > 0) throw new StrictWarningsError(last.warnings);
  return {
    out: outDir,
    snapshotTime: new Date(options.snapshotMs).toISOString(),
    profiles: last.profiles, creators: last.creators, skipped: last.skipped, rendered: 0, rowsRead: 0,
    files: { written: 0, unchanged: last.files, removed: 0 },
    warnings: last.warnings,
    notices: [...folderNotices(last.profiles, options.folderNoticeAt ?? BUILD_NOTICE_PROFILES_PER_DIR), ...extraNotices],
    seconds: (performance.now() - started) / 1000,
    storeUnchanged: true,
  };
}

export function build(options: BuildOptions): BuildReport {
  const started = performance.now();
  // Normalised here too, so library callers get the same checks and no doubled slash.
  const baseUrl = normalizeBaseUrl(options.baseUrl, 'baseUrl');
  const { session } = options;
  const store = session ? session.open() : ProfileStore.open(options.db, { busyTimeoutMs: options.busyTimeoutMs });
  let ownLock: OutDirLock | undefined;
  // A build that fails leaves a new out dir as it found it: the folders its lock made go again (a
  // watcher, which holds the lock, keeps its out dir).
  let built = false;
  try {
    // Taken after the store opened (a bad --db fails fast, creating nothing) and before the snapshot
    // is read, so the tree is brought to a snapshot no older than the previous writer's.
    if (options.lock === undefined) ownLock = OutDirLock.acquire(options.out, { command: 'build', waitMs: options.lockWaitMs });
    const stamp = store.stamp(options.storeSettleMs);
    const conditions = { tool: toolIdentity(), store: stamp.value, baseUrl };
    // Only a settled stamp may say the store is as the last pass read it (see store/stamp.ts).
    const trustedStamp = stamp.settled ? stamp.value : undefined;
    const outDir = resolveOutDir(options.out);
    const renderedBy = `${conditions.tool}\t${baseUrl}`;
    if (trustedStamp !== undefined && !options.fullPass) {
      const last = currentPass(outDir, conditions, options.snapshotMs);
      if (last !== undefined) {
        if (session) adoptUnchanged(session, store, { outDir, renderedBy, last, storeStamp: stamp.value }, () => store.stamp(options.storeSettleMs).value === stamp.value);
        const report = unchangedReport(last, options, outDir, started, copyNotices(store, session));
        built = true;
        return report;
      }
    }
    const env: PassEnv = { options, store, outDir, renderedBy, baseUrl, started };
    // The read transaction ends before the output is committed: renaming a million files must not
    // hold off the platform's writers (in rollback-journal mode a reader blocks every commit).
    let staged: StagedPass | undefined;
    try {
      store.inSnapshot(() => {
        const selection = options.fullPass ? session?.forget() : session?.selection(store, outDir, renderedBy, options.snapshotMs, trustedStamp);
        staged = (selection && selectivePass(env, selection)) ?? pass(env, undefined);
      });
    } catch (error) {
      staged?.output.abort(); // the transaction's own end failed after the pass was staged
      throw error;
    }
    let files: WriteCounts;
    try {
      // From here on the tree changes: the record must not vouch for it until the commit is done.
      forgetPass(outDir);
      files = staged!.output.commit();
    } catch (error) {
      staged!.output.abort(); // when the record could not be removed: nothing was committed
      // The session's copy was brought up to a snapshot the tree does not show.
      store.shadow.discard();
      throw error;
    }
    built = true;
    const result = { ...staged!, files };
    session?.recordPublished(store, { outDir, renderedBy, snapshotMs: options.snapshotMs, storeStamp: stamp.value, warnings: result.warnings });
    recordPass(outDir, {
      ...conditions, snapshotMs: options.snapshotMs,
      stableUntilMs: result.stableUntilMs === Infinity ? null : result.stableUntilMs,
      profiles: result.profiles, creators: result.creators, skipped: result.skipped,
      files: result.files.written + result.files.unchanged, warnings: result.warnings,
    });
    return {
      out: outDir,
      snapshotTime: new Date(options.snapshotMs).toISOString(),
      profiles: result.profiles, creators: result.creators, skipped: result.skipped, rendered: result.rendered,
      rowsRead: result.rowsRead, files: result.files, warnings: result.warnings,
      notices: [...folderNotices(result.profiles, options.folderNoticeAt ?? BUILD_NOTICE_PROFILES_PER_DIR), ...copyNotices(store, session)],
      seconds: (performance.now() - started) / 1000,
      storeUnchanged: false,
    };
  } finally {
    ownLock?.release({ removeCreatedFolders: !built });
    if (!session) store.close();
  }
}

/**
 * An unchanged store in a session: the tree stands as the last pass left it, and the store is still
 * the snapshot that pass read, so the session copies it now (once) for later passes to compare with.
 * The copy only counts if the store's stamp did not move while it was taken.
 */
function adoptUnchanged(session: StoreSession, store: ProfileStore, pass: { outDir: string; renderedBy: string; last: LastPass; storeStamp: string }, stampHolds: () => boolean): void {
  const { outDir, renderedBy, last, storeStamp } = pass;
  if (session.holds(store, outDir, renderedBy)) return;
  try {
    const copied = store.inSnapshot(() => store.shadow.capture() && stampHolds());
    if (!copied) return;
    session.recordPublished(store, { outDir, renderedBy, snapshotMs: last.snapshotMs, storeStamp, warnings: last.warnings });
    // The next pass would otherwise parse the manifest first: read it now, while nothing changed.
    preloadManifest(outDir);
  } catch {
    // Best effort: the build's answer stands; the next pass that changes anything reads every row.
  }
}

interface PassEnv {
  options: BuildOptions;
  store: ProfileStore;
  outDir: string;
  renderedBy: string;
  baseUrl: string;
  started: number;
}

/** A pass rendered and staged, its output not committed yet. */
interface StagedPass {
  output: OutputTransaction;
  profiles: number;
  creators: number;
  skipped: number;
  rendered: number;
  rowsRead: number;
  warnings: RowWarning[];
  stableUntilMs: number;
}

/**
 * A pass that reads only the selected users (see session.ts): every other profile is carried over
 * as the last pass published it, and its list member copied from the last list. Undefined when the
 * last pass's output cannot be carried that way, and a full pass must run instead.
 */
function selectivePass(env: PassEnv, selection: Selection): StagedPass | undefined {
  try {
    return pass(env, selection);
  } catch (error) {
    if (error instanceof SelectionFallsShort) return undefined;
    throw error;
  }
}

/**
 * Raised inside a selective pass when its result would differ from a full pass's: a changed user
 * now claims the name of an unchanged one with a higher id (which a full pass would then skip as a
 * duplicate). Rare; the pass is abandoned, nothing written, and a full pass runs instead.
 */
class SelectionFallsShort extends Error {}

/**
 * One pass over the snapshot `env.store` is in: every candidate row, or with a `selection`, only
 * those users (everything else carried over). Renders and stages what changed, and in a session
 * brings the session's copy up to this snapshot; the caller commits the output.
 */
function pass(env: PassEnv, selection: Selection | undefined): StagedPass {
  const { options, store, outDir, renderedBy, started } = env;
  const ctx = { baseUrl: env.baseUrl, snapshotMs: options.snapshotMs };
  const elapsed = (since: number) => (options.reproducible ? 0 : performance.now() - since);
  const warnings: RowWarning[] = [];
  let profiles = 0, skipped = 0, rendered = 0;
  const output = OutputTransaction.begin(outDir, renderedBy);
  try {
    // Carried-over profiles were not read: the copy says when the first of their ages turns over.
    let stableUntilMs = selection?.stableUntilMs ?? Infinity;
    const creators = new CreatorsList(output, CREATORS_FILE);
    if (selection !== undefined) {
      const carried = carryOver(output, store, selection);
      if (carried === undefined || !creators.keepCarried()) throw new SelectionFallsShort();
      profiles += carried;
      store.shadow.select(selection.users);
    }

    /**
     * A row whose signature equals the one its published profile was rendered from is kept as it
     * is: no render, no JSON, no hash. The account age is part of the signature, so a profile whose
     * age turns over is rendered again; a row that had warnings has no signature and always is.
     * Returns true when kept; otherwise the row's signature if it had to be computed (for the render
     * path to reuse), or undefined.
     */
    const keepIfUnchanged = (row: StoreRow): true | string | undefined => {
      const username = row.user[Col.username];
      if (typeof username !== 'string' || !Number.isSafeInteger(row.user[Col.id])) return undefined;
      const name = username.toLowerCase();
      const last = output.previousProfile(name);
      if (last === undefined || output.hasProfile(name)) return undefined;
      const member = row.user[Col.status] === 'active';
      // A list member's bytes come from the last list file, which must be there, as it was written.
      const length = member ? listLength(last) : undefined;
      if (member && (length === undefined || !creators.canKeep)) return undefined;
      const created = parseStoreDate(row.user[Col.createdAt]);
      if (created === undefined) return undefined;
      // The same account age renderUser derives, so this is the signature it would be stored under.
      const signature = rowSignature(row, wholeDaysBetween(created.ms, options.snapshotMs));
      if (!hasSignature(last, signature)) return signature;
      output.keepProfile(name, last);
      stableUntilMs = Math.min(stableUntilMs, nextAgeChangeMs(created.ms, options.snapshotMs));
      profiles++;
      // The whole entry, which starts with the data hash: a hash cut out of it (a sliced string per
      // member) kept about 70 MB more alive at a million profiles.
      if (length !== undefined) creators.keep(name, last, length);
      return true;
    };

    let rowsRead = 0;
    store.forEachRow((row) => {
      if (++rowsRead % PROGRESS_EVERY === 0) {
        options.onProgress?.(rowsRead);
        collectIfGrown();
      }
      const kept = keepIfUnchanged(row);
      if (kept === true) return;
      rendered++;
      const renderStarted = performance.now();
      const result = renderUser(row, ctx);
      if (result.warnings.length > 0) warnings.push(...result.warnings);
      if (!result.published) {
        skipped++;
        return;
      }
      const { user } = result;
      stableUntilMs = Math.min(stableUntilMs, nextAgeChangeMs(result.createdMs, options.snapshotMs));
      const name = user.username.toLowerCase();
      // Rows arrive in id order, so the first of a case-insensitive duplicate has the lowest id.
      if (output.hasProfile(name)) {
        // A carried-over profile's user was not read: it holds the name rightly only with a lower id.
        if (selection !== undefined && output.carriedEntry(name) !== undefined && !heldByLowerId(store, selection, name, row.user[Col.id])) throw new SelectionFallsShort();
        warnings.push({ id: row.user[Col.id], reason: 'username equals another user\'s ignoring letter case, and that user has a lower id; not published' });
        skipped++;
        return;
      }
      const userJson = JSON.stringify(user);
      const hash = fingerprint(userJson);
      const signature = result.warnings.length === 0 ? kept ?? rowSignature(row, user.accountAgeDays) : '';
      const memberLength = user.status === 'active' ? creators.add(name, userJson, hash) : undefined;
      output.profile(name, hash, signature, memberLength, () => successDocument(userJson, meta(options.snapshotMs, elapsed(renderStarted))));
      profiles++;
    }, selection !== undefined);
    options.onProgress?.(rowsRead);
    collectIfGrown();
    creators.finish(SUCCESS_HEAD, () => envelopeTail(meta(options.snapshotMs, elapsed(started))));

    for (const code of Object.keys(ERRORS) as ErrorCode[]) {
      const spec = ERRORS[code];
      output.file(errorFile(code), fingerprint(errorBody(spec)), () => errorDocument(spec, meta(options.snapshotMs, 0)));
    }
    // The contract (contract/openapi.json), published byte for byte at api/v1/openapi.json.
    const contract = contractText();
    output.file(OPENAPI_FILE, fingerprint(contract), () => contract);

    if (options.strict && warnings.length > 0) {
      throw new StrictWarningsError(warnings);
    }
    collectIfGrown();
    if (selection !== undefined) {
      store.shadow.update();
    } else if (options.session) {
      store.shadow.capture();
    }
    return { output, profiles, creators: creators.size, skipped, rendered, rowsRead, warnings, stableUntilMs };
  } catch (error) {
    output.abort();
    throw error;
  }
}

/**
 * Carries every profile of the last pass over to this one except those the selected users held
 * (their rows are read again). A user holds its name when the last pass published it: every user it
 * had no warning for; of those it had warnings for, only ones whose profile records no signature.
 */
function carryOver(output: OutputTransaction, store: ProfileStore, selection: Selection): number | undefined {
  const released = new Set<string>();
  for (const [id, username] of store.shadow.usernames(selection.users)) {
    if (typeof username !== 'string') continue;
    const name = username.toLowerCase();
    const entry = output.previousProfile(name);
    if (entry !== undefined && (!selection.warned.has(id) || isUnsigned(entry))) released.add(name);
  }
  return output.carryOver(released);
}

/** Whether the unread user holding `name` has a lower id than `id`, as a full pass would find. */
function heldByLowerId(store: ProfileStore, selection: Selection, name: string, id: number): boolean {
  const holder = store.shadow.holders(name).filter((holderId) => !selection.users.has(holderId));
  return holder.length === 1 && holder[0]! < id;
}
