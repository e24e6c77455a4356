/**
 * The command line: the only code that reads argv and the environment, prints, and decides the exit
 * code. Commands resolve their options (flag, then environment, then default), call the library, and
 * report. Every failure comes back here: one exit point.
 */
import { Command, CommanderError, Option } from 'commander';
import { build, type BuildReport } from '../build.js';
import { normalizeBaseUrl, positiveInteger, snapshotTime } from '../config.js';
import { ExitCode, SnapshotError, StrictWarningsError, describeCause } from '../errors.js';
import { formatSummary, formatWarnings, ProgressLine } from './report.js';

export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

export const DEFAULTS = {
  db: 'data/profiles.db',
  out: 'dist',
  baseUrl: 'http://localhost:3000',
  busyTimeoutMs: 5000,
} as const;

interface BuildFlags {
  db?: string;
  out?: string;
  baseUrl?: string;
  strict?: boolean;
  json?: boolean;
  busyTimeout?: string;
}

/** Runs the CLI and returns the exit code; never calls process.exit. */
export async function main(argv: readonly string[], io: Io): Promise<number> {
  let json = false;
  const program = new Command('profile-snapshot')
    .description('Pre-render the public profile API from the profile store as static JSON files for a CDN.')
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
    });

  program
    .command('build')
    .description('Write the API from one consistent snapshot of the store into the out dir. Unchanged documents keep their bytes; profiles no longer published are removed.')
    .addOption(new Option('--db <file>', 'profile store (SQLite), opened read-only [env: PROFILE_DB] (default: "data/profiles.db")'))
    .addOption(new Option('--out <dir>', 'output folder, the site the CDN publishes [env: PROFILE_OUT] (default: "dist")'))
    .addOption(new Option('--base-url <url>', 'absolute http(s) URL the API is served from, used in avatarUrl, pageUrl and decoration URLs [env: BASE_URL, then Netlify\'s URL] (default: "http://localhost:3000")'))
    .option('--strict', 'treat any data warning as an error: exit 4 and write nothing', false)
    .option('--json', 'print the build report (counts, every warning) as JSON on stdout', false)
    .addOption(new Option('--busy-timeout <ms>', 'how long to wait for a store locked by a writer before exit 3').default(String(DEFAULTS.busyTimeoutMs)))
    .addHelpText('after', `
Environment:
  SOURCE_DATE_EPOCH  snapshot time in seconds since the epoch, for byte-for-byte reproducible builds

Exit codes:
  0 built (warnings allowed)   2 usage error   3 store unusable   4 warnings under --strict
  5 out dir unusable           1 a bug in profile-snapshot`)
    .action((flags: BuildFlags) => {
      json = Boolean(flags.json);
      const report = runBuild(flags, io);
      if (json) io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    });

  try {
    await program.parseAsync(argv as string[], { from: 'user' });
    return ExitCode.ok;
  } catch (error) {
    return exitCodeFor(error, io, json);
  }
}

function runBuild(flags: BuildFlags, io: Io): BuildReport {
  const { env } = io;
  const baseUrlInput = flags.baseUrl ?? env.BASE_URL ?? env.URL;
  const baseUrlSource = flags.baseUrl !== undefined ? '--base-url' : env.BASE_URL !== undefined ? 'BASE_URL' : env.URL !== undefined ? 'URL' : 'default';
  const time = snapshotTime(env.SOURCE_DATE_EPOCH);
  const progress = new ProgressLine(io.stderr);
  try {
    const report = build({
      db: flags.db ?? env.PROFILE_DB ?? DEFAULTS.db,
      out: flags.out ?? env.PROFILE_OUT ?? DEFAULTS.out,
      baseUrl: normalizeBaseUrl(baseUrlInput ?? DEFAULTS.baseUrl, baseUrlSource),
      snapshotMs: time.ms,
      reproducible: time.reproducible,
      strict: Boolean(flags.strict),
      busyTimeoutMs: positiveInteger(flags.busyTimeout ?? String(DEFAULTS.busyTimeoutMs), '--busy-timeout'),
      onProgress: (rows) => progress.update(`read ${rows.toLocaleString('en-US')} rows`),
    });
    progress.clear();
    io.stderr.write(formatWarnings(report.warnings));
    io.stderr.write(`${formatSummary(report)}\n`);
    return report;
  } finally {
    progress.clear();
  }
}

/** The one exit point: expected failures get their code and one line; anything else is a bug. */
function exitCodeFor(error: unknown, io: Io, json: boolean): number {
  if (error instanceof CommanderError) {
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') return ExitCode.ok;
    return ExitCode.usage; // commander already printed what was wrong
  }
  if (error instanceof SnapshotError) {
    if (error instanceof StrictWarningsError) io.stderr.write(formatWarnings(error.warnings));
    const cause = error.cause === undefined ? '' : ` (${describeCause(error.cause)})`;
    const detail = error.message.includes(describeCause(error.cause)) ? '' : cause;
    io.stderr.write(`profile-snapshot: ${error.message}${detail}${error.hint ? `. Fix: ${error.hint}.` : ''}\n`);
    if (json) {
      const warnings = error instanceof StrictWarningsError ? error.warnings : undefined;
      io.stdout.write(`${JSON.stringify({ error: { kind: error.kind, exitCode: error.exitCode, message: error.message, hint: error.hint ?? null }, warnings }, null, 2)}\n`);
    }
    return error.exitCode;
  }
  io.stderr.write(`profile-snapshot: internal error, please report it: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  return ExitCode.bug;
}
