/**
 * A build's options, resolved once: defaults applied, the out dir made absolute, the base URL
 * checked and normalised, the render key derived. The result is one frozen object that the CLI (from
 * flags and the environment), a watcher (for every cycle) and a library caller all hand to `build`,
 * which uses it as it is. What differs per build of a process (the snapshot time, the lock held, the
 * session, progress) is not an option but the build's run (`BuildRun`).
 */
import { normalizeBaseUrl } from './core/config.js';
import { DEFAULT_OUT_DIR, resolveOutDir } from './core/layout.js';
import { renderKeyOf, type RenderKey } from './core/render-key.js';
import { ALL_USERS, checkShard, type Slice } from './core/slice.js';
import { BUILD_NOTICE_PROFILES_PER_DIR } from './hosting/hosts/netlify-limits.js';
import type { StoreSession } from './incremental/session.js';
import { DEFAULT_LOCK_WAIT_MS, type OutDirLock } from './output/lock.js';
import { DEFAULT_THREADS } from './pass/threads.js';
import { DEFAULT_BUSY_TIMEOUT_MS } from './store/busy-timeout.js';

/** Every default of a build, the library's; the CLI shows them in --help. */
export const BUILD_DEFAULTS = Object.freeze({
  db: 'data/profiles.db',
  out: DEFAULT_OUT_DIR,
  baseUrl: 'http://localhost:3000',
  busyTimeoutMs: DEFAULT_BUSY_TIMEOUT_MS,
  threads: DEFAULT_THREADS,
  lockWaitMs: DEFAULT_LOCK_WAIT_MS,
  folderNoticeAt: BUILD_NOTICE_PROFILES_PER_DIR,
});

export interface BuildOptions extends BuildRun {
  /** The profile store (SQLite), opened read-only. */
  db?: string;
  /** The out dir, as given (made absolute against the working directory). */
  out?: string;
  /** Absolute http(s) URL without query or fragment (see normalizeBaseUrl). */
  baseUrl?: string;
  /** Any warning fails the build (exit 4) and nothing is written. */
  strict?: boolean;
  busyTimeoutMs?: number;
  /**
   * How long a build that takes the out dir's lock itself, or a watcher as it starts, waits for a
   * holder, then exits 5 (a build and a watcher never write one tree at once).
   */
  lockWaitMs?: number;
  /**
   * A notice is reported when a users folder holds more profiles than this: Netlify refuses a deploy
   * with more than 54,000 files in one folder.
   */
  folderNoticeAt?: number;
  /**
   * Threads a full pass may be shared between (default: two when the machine has two CPUs; 1 never
   * shares). The output is the same either way.
   */
  threads?: number;
  /** How long the store's files must have been left alone before their stamp is trusted (tests). */
  storeSettleMs?: number;
  /**
   * Build one shard of the API: the users whose slice among `count` is `index` (core/slice.ts), with
   * their profiles and their part of the creators list. Publishing such a tree is not supported yet
   * (publish refuses it). Default: every user.
   */
  shard?: Slice;
}

/** What differs between the builds of one process: given with the options, or beside them (see `build`). */
export interface BuildRun {
  /** Snapshot time, ms since the epoch (the wall clock, or SOURCE_DATE_EPOCH); default: now. */
  snapshotMs?: number;
  /** Reproducible mode (SOURCE_DATE_EPOCH): executionTimeMs is written as 0 so bytes repeat exactly. */
  reproducible?: boolean;
  /**
   * Read every row even when the store is unchanged since the last build (by default such a build
   * reads nothing and writes nothing: see incremental/plan.ts), and heal the tree: every file the
   * manifest says is unchanged is checked on disk, and one missing, truncated or altered is rewritten.
   */
  fullPass?: boolean;
  /** Called now and then during the pass with the number of rows read so far. */
  onProgress?: (rowsRead: number) => void;
  /** The out dir's lock when the caller already holds it (a watcher holds it for its whole life). */
  lock?: OutDirLock;
  /**
   * A long-lived reader (the watcher's) to use instead of opening the store: it remembers the last
   * pass, so a pass can read only the users whose rows changed since (see incremental/session.ts).
   */
  session?: StoreSession;
}

const RESOLVED = Symbol('resolved build options');

/** The options with every default applied and every value checked: frozen. */
export interface ResolvedBuildOptions {
  readonly db: string;
  /** Absolute. */
  readonly outDir: string;
  readonly baseUrl: string;
  readonly renderKey: RenderKey;
  /** The users the build publishes: a shard's, or all (slice 0 of 1). */
  readonly users: Slice;
  readonly strict: boolean;
  readonly busyTimeoutMs: number;
  readonly lockWaitMs: number;
  readonly folderNoticeAt: number;
  readonly threads: number;
  readonly storeSettleMs: number | undefined;
  /** The run given with the options, if any (a build's own run fields win over it). */
  readonly run: Readonly<BuildRun>;
  readonly [RESOLVED]: true;
}

/**
 * Resolves `options` once. `baseUrlSource` names where the base URL came from in a usage error
 * (a flag, a variable); a resolved object is returned as it is.
 */
export function resolveBuildOptions(options: BuildOptions | ResolvedBuildOptions, baseUrlSource = 'baseUrl'): ResolvedBuildOptions {
  if (isResolved(options)) return options;
  const { snapshotMs, reproducible, fullPass, onProgress, lock, session } = options;
  const baseUrl = normalizeBaseUrl(options.baseUrl ?? BUILD_DEFAULTS.baseUrl, baseUrlSource);
  const users = checkShard(options.shard ?? ALL_USERS, 'shard');
  return Object.freeze({
    db: options.db ?? BUILD_DEFAULTS.db,
    outDir: resolveOutDir(options.out ?? BUILD_DEFAULTS.out),
    baseUrl,
    renderKey: renderKeyOf(baseUrl, undefined, users),
    users,
    strict: options.strict ?? false,
    busyTimeoutMs: options.busyTimeoutMs ?? BUILD_DEFAULTS.busyTimeoutMs,
    lockWaitMs: options.lockWaitMs ?? BUILD_DEFAULTS.lockWaitMs,
    folderNoticeAt: options.folderNoticeAt ?? BUILD_DEFAULTS.folderNoticeAt,
    threads: options.threads ?? BUILD_DEFAULTS.threads,
    storeSettleMs: options.storeSettleMs,
    run: Object.freeze({ snapshotMs, reproducible, fullPass, onProgress, lock, session }),
    [RESOLVED]: true as const,
  });
}

function isResolved(options: BuildOptions | ResolvedBuildOptions): options is ResolvedBuildOptions {
  return (options as Partial<ResolvedBuildOptions>)[RESOLVED] === true;
}
