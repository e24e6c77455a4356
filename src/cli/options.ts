/**
 * Options shared by the commands that build (build, watch): each resolved flag first, then the
 * environment, then the default, and validated into BuildOptions.
 */
import { Command, Option } from 'commander';
import { BUILD_DEFAULTS as DEFAULTS, resolveBuildOptions, type ResolvedBuildOptions } from '../build-options.js';
import { snapshotTime } from '../core/config.js';
import { parseShard, type Slice } from '../core/slice.js';
import { count } from '../core/text.js';
import { SHARE_FROM, SHARE_REBUILD_BELOW_BYTES } from '../pass/threads.js';
import { parseNumber, wholeNumber } from './numbers.js';
import type { Io } from './io.js';

export interface BuildFlags {
  db?: string;
  out?: string;
  baseUrl?: string;
  strict?: boolean;
  json?: boolean;
  busyTimeout?: string;
  full?: boolean;
  threads?: string;
  shard?: string;
}

/** `--shard <i/n>`: which shard of the users a command works on; the same env everywhere. */
export function shardOption(what: string): Option {
  return new Option(
    '--shard <i/n>',
    `${what}: the users whose lower-cased username hashes (32-bit FNV-1a) to i modulo n; see docs/scaling-out.md [env: PROFILE_SHARD] (default: every user)`,
  );
}

/** The shard from `--shard`, then PROFILE_SHARD; undefined: every user. A bad value is a usage error (exit 2). */
export function shardFromFlags(flags: { shard?: string }, env: NodeJS.ProcessEnv): Slice | undefined {
  if (flags.shard !== undefined) return parseShard(flags.shard, '--shard');
  const fromEnv = env.PROFILE_SHARD;
  return fromEnv === undefined || fromEnv === '' ? undefined : parseShard(fromEnv, 'PROFILE_SHARD');
}

/** `--out <dir>`, described for what the command does with it; the same env and default everywhere. */
export function outOption(what: string): Option {
  return new Option('--out <dir>', `${what} [env: PROFILE_OUT] (default: "${DEFAULTS.out}")`);
}

export function addBuildOptions(command: Command): Command {
  return command
    .addOption(new Option('--db <file>', `profile store (SQLite), opened read-only [env: PROFILE_DB] (default: "${DEFAULTS.db}")`))
    .addOption(outOption('output folder, the site the CDN publishes'))
    .addOption(
      new Option(
        '--base-url <url>',
        `absolute http(s) URL the API is served from, used in avatarUrl, pageUrl and decoration URLs [env: BASE_URL, then Netlify's URL] (default: "${DEFAULTS.baseUrl}")`,
      ),
    )
    .addOption(shardOption('build one shard of the API'))
    .option('--strict', 'treat any data warning as an error: exit 4 and write nothing', false)
    .option('--json', 'print the report (counts, every warning) as JSON on stdout', false)
    .option(
      '--full',
      'read every row even when the store is unchanged since the last build (by default such a build reads and writes nothing), and rewrite every file of the tree that is missing, truncated or altered',
      false,
    )
    .addOption(
      new Option('--busy-timeout <ms>', 'how long to wait for a store locked by a writer before giving up (exit 3)').default(
        String(DEFAULTS.busyTimeoutMs),
      ),
    )
    .addOption(
      new Option(
        '--threads <n>',
        `threads a full pass over a large store (${count(SHARE_FROM)} users or more) is shared between, at most one per CPU; 1 keeps it on one thread. A rebuild of a tree whose manifest passes ${SHARE_REBUILD_BELOW_BYTES / 2 ** 20} MiB stays on one thread, to bound its memory. From 2, a worker thread also compresses part of the creators list's gzip variant when much of it changed. The output is the same`,
      ).default(String(DEFAULTS.threads)),
    );
}

export const OUT_ENV_HELP = `
Environment:
  PROFILE_DB, PROFILE_OUT, BASE_URL (then URL, set by Netlify), PROFILE_SHARD  defaults for the flags above
  SOURCE_DATE_EPOCH  snapshot time in seconds since the epoch, for byte-for-byte reproducible builds

Exit codes:
  0 success (warnings allowed)  2 usage error  3 store unusable  4 warnings under --strict
  5 out dir unusable            1 a bug in profile-snapshot
`;

/** The out dir from the flag, the environment or the default, as given (messages name it so). */
export function outDirOption(flags: { out?: string }, env: NodeJS.ProcessEnv): string {
  return flags.out ?? env.PROFILE_OUT ?? DEFAULTS.out;
}

/**
 * The flags, then the environment, resolved by the library into the options every build of the
 * command uses (the snapshot time is each build's own: see `snapshotTime`).
 */
export function buildOptionsFromFlags(flags: BuildFlags, io: Io): ResolvedBuildOptions {
  const { env } = io;
  const baseUrlSource =
    flags.baseUrl !== undefined
      ? '--base-url'
      : env.BASE_URL !== undefined
        ? 'BASE_URL'
        : env.URL !== undefined
          ? 'URL'
          : 'the default base URL';
  // Validate SOURCE_DATE_EPOCH now so a bad value is a usage error before any work.
  snapshotTime(env.SOURCE_DATE_EPOCH);
  const options = {
    db: flags.db ?? env.PROFILE_DB,
    out: outDirOption(flags, env),
    baseUrl: flags.baseUrl ?? env.BASE_URL ?? env.URL,
    strict: Boolean(flags.strict),
    fullPass: Boolean(flags.full),
    busyTimeoutMs: wholeNumber(flags.busyTimeout ?? String(DEFAULTS.busyTimeoutMs), '--busy-timeout'),
    shard: shardFromFlags(flags, env),
    threads: parseNumber(flags.threads ?? String(DEFAULTS.threads), '--threads', {
      expected: 'a whole number from 1 to 64',
      positive: true,
      max: 64,
    }),
  };
  return resolveBuildOptions(options, baseUrlSource);
}
