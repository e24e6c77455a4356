/**
 * One build, read as its steps: open the store and take the out dir's lock, plan what may be skipped
 * (incremental/plan.ts), stage a pass over one consistent snapshot (pass/pass.ts), commit the output, and
 * record the pass. Plain data in (BuildOptions, resolved once: build-options.ts), plain data out
 * (BuildReport).
 */
import { performance } from 'node:perf_hooks';
import { resolveBuildOptions, type BuildOptions, type BuildRun, type ResolvedBuildOptions } from './build-options.js';
import { StrictWarningsError } from './core/errors.js';
import { keepYoungGenerationSmall } from './core/memory.js';
import { PROFILE_DIRS } from './core/layout.js';
import { NETLIFY_MAX_FILES_PER_DIR } from './hosting/hosts/netlify-limits.js';
import type { LastPass } from './incremental/last-pass.js';
import type { ChangeSource } from './incremental/session.js';
import { PassPlan } from './incremental/plan.js';
import type { StoreSession } from './incremental/session.js';
import { stagePass, type PassInputs, type StagedPass } from './pass/pass.js';
import { OutDirLock } from './output/lock.js';
import type { WriteCounts } from './output/tree.js';
import type { RowWarning } from './render/user.js';
import { ProfileStore } from './store/read.js';
import { count } from './core/text.js';

export type { BuildOptions, BuildRun, ResolvedBuildOptions } from './build-options.js';

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
  /** How the build found what changed; `clockFallback` says why the store's change clock was not followed. */
  changes: ChangeSource;
}

/**
 * One build with `options` (resolved here unless they already are: see build-options.ts); `run`
 * gives what differs between the builds of one process, over the run given with the options.
 */
export function build(options: BuildOptions | ResolvedBuildOptions, run: BuildRun = {}): BuildReport {
  keepYoungGenerationSmall();
  const inputs = openInputs(resolveBuildOptions(options), run);
  const { store, session, lock } = inputs;
  let ownLock: OutDirLock | undefined;
  // A build that fails leaves a new out dir as it found it: the folders its lock made go again (a
  // watcher, which holds the lock, keeps its out dir).
  let built = false;
  try {
    // Taken after the store opened (a bad --db fails fast, creating nothing) and before the snapshot
    // is read, so the tree is brought to a snapshot no older than the previous writer's.
    if (lock === undefined) ownLock = OutDirLock.acquire(inputs.outDir, { command: 'build', waitMs: inputs.options.lockWaitMs });
    const plan = new PassPlan({ ...inputs, fullPass: inputs.healing, storeSettleMs: inputs.options.storeSettleMs });
    const last = plan.unchanged();
    if (last !== undefined) {
      if (inputs.strict && last.warnings.length > 0) throw new StrictWarningsError(last.warnings);
      built = true;
      return unchangedReport(last, inputs);
    }
    const staged = stageInSnapshot(inputs, plan);
    const files = commit(staged, plan);
    built = true;
    plan.record({ ...staged, files: files.written + files.unchanged });
    return passReport(staged, files, inputs, plan.source(staged.selective));
  } finally {
    ownLock?.release({ removeCreatedFolders: !built });
    if (!session) store.close();
  }
}

interface BuildInputs extends PassInputs {
  options: ResolvedBuildOptions;
  session: StoreSession | undefined;
  lock: OutDirLock | undefined;
}

/** The resolved options and this build's run, with the store opened (the session's, if there is one). */
function openInputs(options: ResolvedBuildOptions, given: BuildRun): BuildInputs {
  const started = performance.now();
  // The build's own run wins over the run given with the options, field by field.
  const run: BuildRun = { ...options.run, ...Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined)) };
  const { session } = run;
  const store = session ? session.open() : ProfileStore.open(options.db, { busyTimeoutMs: options.busyTimeoutMs });
  return {
    options,
    store,
    session,
    lock: run.lock,
    started,
    outDir: options.outDir,
    users: options.users,
    baseUrl: options.baseUrl,
    renderKey: options.renderKey,
    snapshotMs: run.snapshotMs ?? Date.now(),
    reproducible: run.reproducible ?? false,
    strict: options.strict,
    onProgress: run.onProgress,
    threads: options.threads,
    healing: run.fullPass ?? false,
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
function notices(profiles: number, inputs: BuildInputs): string[] {
  const copyNotice = inputs.session ? inputs.store.shadow.failureNotice() : undefined;
  const folder = folderNotices(profiles, inputs.options.folderNoticeAt);
  return copyNotice === undefined ? folder : [...folder, copyNotice];
}

/** The report of a build that found the last pass still standing: the same counts and warnings. */
function unchangedReport(last: LastPass, inputs: BuildInputs): BuildReport {
  return {
    out: inputs.outDir,
    snapshotTime: new Date(inputs.snapshotMs).toISOString(),
    profiles: last.profiles,
    creators: last.creators,
    skipped: last.skipped,
    rendered: 0,
    rowsRead: 0,
    threads: 0,
    files: { written: 0, unchanged: last.files, removed: 0 },
    repaired: null,
    warnings: last.warnings,
    notices: notices(last.profiles, inputs),
    seconds: (performance.now() - inputs.started) / 1000,
    storeUnchanged: true,
    changes: { by: 'stamp', clockFallback: null },
  };
}

function passReport(staged: StagedPass, files: WriteCounts, inputs: BuildInputs, changes: ChangeSource): BuildReport {
  const { profiles, creators, skipped, rendered, rowsRead, warnings, threads } = staged;
  return {
    out: inputs.outDir,
    snapshotTime: new Date(inputs.snapshotMs).toISOString(),
    profiles,
    creators,
    skipped,
    rendered,
    rowsRead,
    threads,
    files,
    repaired: inputs.healing ? staged.output.repaired : null,
    warnings,
    notices: notices(profiles, inputs),
    seconds: (performance.now() - inputs.started) / 1000,
    storeUnchanged: false,
    changes,
  };
}
