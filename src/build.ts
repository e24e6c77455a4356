/**
 * One build, read as its steps: open the store and take the out dir's lock, plan what may be skipped
 * (incremental/plan.ts), stage a pass over one consistent snapshot (pass/pass.ts), commit the output, and
 * record the pass. Plain data in (BuildOptions), plain data out (BuildReport).
 */
import { performance } from 'node:perf_hooks';
import { normalizeBaseUrl } from './core/config.js';
import { StrictWarningsError } from './core/errors.js';
import { keepYoungGenerationSmall } from './core/memory.js';
import { PROFILE_DIRS, resolveOutDir } from './core/layout.js';
import { toolIdentity } from './core/version.js';
import { BUILD_NOTICE_PROFILES_PER_DIR, NETLIFY_MAX_FILES_PER_DIR } from './hosting/limits.js';
import type { LastPass } from './incremental/last-pass.js';
import { PassPlan } from './incremental/plan.js';
import type { StoreSession } from './incremental/session.js';
import { stagePass, type PassInputs, type StagedPass } from './pass/pass.js';
import { DEFAULT_THREADS } from './pass/threads.js';
import { OutDirLock } from './output/lock.js';
import type { WriteCounts } from './output/tree.js';
import type { RowWarning } from './render/user.js';
import { ProfileStore } from './store/read.js';
import { count } from './core/text.js';

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
   * reads nothing and writes nothing: see incremental/plan.ts), and heal the tree: every file the
   * manifest says is unchanged is checked on disk, and one missing, truncated or altered is rewritten.
   */
  fullPass?: boolean;
  /**
   * Threads a full pass may be shared between (default: two when the machine has two CPUs; 1 never
   * shares). The output is the same either way.
   */
  threads?: number;
  /** How long the store's files must have been left alone before their stamp is trusted (tests). */
  storeSettleMs?: number;
  /**
   * A long-lived reader (the watcher's) to use instead of opening the store: it remembers the last
   * pass, so a pass can read only the users whose rows changed since (see incremental/session.ts).
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
  /** Threads that read them (a full pass of a large store is shared: see `threads` in BuildOptions). */
  threads: number;
  files: WriteCounts;
  /**
   * Files of the last build whose data did not change but which a full build (`fullPass`) found
   * missing, truncated or altered on disk and rewrote (counted in `files.written`). Null when the
   * build did not look: a plain build trusts the manifest.
   */
  repaired: number | null;
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

export function build(options: BuildOptions): BuildReport {
  keepYoungGenerationSmall();
  const inputs = resolveInputs(options);
  const { store, session } = inputs;
  let ownLock: OutDirLock | undefined;
  // A build that fails leaves a new out dir as it found it: the folders its lock made go again (a
  // watcher, which holds the lock, keeps its out dir).
  let built = false;
  try {
    // Taken after the store opened (a bad --db fails fast, creating nothing) and before the snapshot
    // is read, so the tree is brought to a snapshot no older than the previous writer's.
    if (options.lock === undefined) ownLock = OutDirLock.acquire(inputs.outDir, { command: 'build', waitMs: options.lockWaitMs });
    const plan = new PassPlan({ ...inputs, session, fullPass: options.fullPass ?? false, storeSettleMs: options.storeSettleMs });
    const last = plan.unchanged();
    if (last !== undefined) {
      if (options.strict && last.warnings.length > 0) throw new StrictWarningsError(last.warnings);
      built = true;
      return unchangedReport(last, options, inputs);
    }
    const staged = stageInSnapshot(inputs, plan);
    const files = commit(staged, plan);
    built = true;
    plan.record({ ...staged, files: files.written + files.unchanged });
    return passReport(staged, files, options, inputs);
  } finally {
    ownLock?.release({ removeCreatedFolders: !built });
    if (!session) store.close();
  }
}

interface BuildInputs extends PassInputs {
  session: StoreSession | undefined;
}

/** Options made absolute and checked once; the store opened (the session's, if there is one). */
function resolveInputs(options: BuildOptions): BuildInputs {
  const started = performance.now();
  // Normalised here too, so library callers get the same checks and no doubled slash.
  const baseUrl = normalizeBaseUrl(options.baseUrl, 'baseUrl');
  const { session } = options;
  const store = session ? session.open() : ProfileStore.open(options.db, { busyTimeoutMs: options.busyTimeoutMs });
  return {
    store,
    session,
    baseUrl,
    started,
    outDir: resolveOutDir(options.out),
    renderedBy: `${toolIdentity()}\t${baseUrl}`,
    snapshotMs: options.snapshotMs,
    reproducible: options.reproducible ?? false,
    strict: options.strict ?? false,
    onProgress: options.onProgress,
    threads: options.threads ?? DEFAULT_THREADS,
    healing: options.fullPass ?? false,
    manifests: session?.manifests,
  };
}

/**
 * Stages a pass inside one read transaction, which ends before the output is committed: renaming a
 * million files must not hold off the platform's writers (in rollback-journal mode a reader blocks
 * every commit).
 */
function stageInSnapshot(inputs: BuildInputs, plan: PassPlan): StagedPass {
  let staged: StagedPass | undefined;
  try {
    inputs.store.inSnapshot(() => {
      staged = stagePass(inputs, plan.selection());
      plan.passStaged(staged.selective);
    });
  } catch (error) {
    staged?.output.abort(); // the copy's update, or the transaction's own end, failed after staging
    throw error;
  }
  return staged!;
}

function commit(staged: StagedPass, plan: PassPlan): WriteCounts {
  try {
    plan.committing();
    return staged.output.commit();
  } catch (error) {
    staged.output.abort(); // when the record could not be removed: nothing was committed
    plan.commitFailed();
    throw error;
  }
}

function folderNotices(profiles: number, noticeAt: number): string[] {
  if (profiles <= noticeAt) return [];
  const limit = count(NETLIFY_MAX_FILES_PER_DIR);
  return PROFILE_DIRS.map(
    (dir) =>
      `${dir} holds ${count(profiles)} profiles: Netlify refuses a deploy with more than ` +
      `${limit} files in one folder (see "The 54,000-files-per-folder limit" in docs/hosting.md: past it, self-host with serve)`,
  );
}

/** Advice about the whole tree; in a session, why its copy of the snapshot could not be kept. */
function notices(profiles: number, options: BuildOptions, inputs: BuildInputs): string[] {
  const copyNotice = inputs.session ? inputs.store.shadow.failureNotice() : undefined;
  const folder = folderNotices(profiles, options.folderNoticeAt ?? BUILD_NOTICE_PROFILES_PER_DIR);
  return copyNotice === undefined ? folder : [...folder, copyNotice];
}

/** The report of a build that found the last pass still standing: the same counts and warnings. */
function unchangedReport(last: LastPass, options: BuildOptions, inputs: BuildInputs): BuildReport {
  return {
    out: inputs.outDir,
    snapshotTime: new Date(options.snapshotMs).toISOString(),
    profiles: last.profiles,
    creators: last.creators,
    skipped: last.skipped,
    rendered: 0,
    rowsRead: 0,
    threads: 0,
    files: { written: 0, unchanged: last.files, removed: 0 },
    repaired: null,
    warnings: last.warnings,
    notices: notices(last.profiles, options, inputs),
    seconds: (performance.now() - inputs.started) / 1000,
    storeUnchanged: true,
  };
}

function passReport(staged: StagedPass, files: WriteCounts, options: BuildOptions, inputs: BuildInputs): BuildReport {
  const { profiles, creators, skipped, rendered, rowsRead, warnings, threads } = staged;
  return {
    out: inputs.outDir,
    snapshotTime: new Date(options.snapshotMs).toISOString(),
    profiles,
    creators,
    skipped,
    rendered,
    rowsRead,
    threads,
    files,
    repaired: inputs.healing ? staged.output.repaired : null,
    warnings,
    notices: notices(profiles, options, inputs),
    seconds: (performance.now() - inputs.started) / 1000,
    storeUnchanged: false,
  };
}
