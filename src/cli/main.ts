/**
 * The command line: the only code that reads argv and the environment, prints, and decides the exit
 * code. Each command lives in ./commands and calls the library; every failure comes back here, to
 * the one exit point.
 */
import { Command, CommanderError } from 'commander';
import { ExitCode, reportOf, StrictWarningsError } from '../core/errors.js';
import { applyMemoryUpkeep } from './memory-upkeep.js';
import type { CliState, Io } from './io.js';
import { formatWarnings } from './report.js';
import { TOOL_VERSION } from '../core/version.js';

export type { Io } from './io.js';

type CommandFactory = (io: Io, state: CliState) => Command;

/**
 * Every command, in `--help` order, loaded on demand: a command's module pulls in its own libraries
 * (ajv for verify, serve-handler for serve...), and loading them all would slow every start-up.
 * `build` must start fast: a CI step and every no-change rebuild pay it.
 */
const COMMANDS: Record<string, () => Promise<CommandFactory>> = {
  build: async () => (await import('./commands/build.js')).buildCommand,
  watch: async () => (await import('./commands/watch.js')).watchCommand,
  regenerate: async () => (await import('./commands/regenerate.js')).regenerateCommand,
  publish: async () => (await import('./commands/publish.js')).publishCommand,
  compose: async () => (await import('./commands/compose.js')).composeCommand,
  serve: async () => (await import('./commands/serve.js')).serveCommand,
  verify: async () => (await import('./commands/verify.js')).verifyCommand,
  netlify: async () => (await import('./commands/netlify.js')).netlifyCommand,
  cloudflare: async () => (await import('./commands/cloudflare.js')).cloudflareCommand,
  aws: async () => (await import('./commands/aws.js')).awsCommand,
  seed: async () => (await import('./commands/seed.js')).seedCommand,
  store: async () => (await import('./commands/store.js')).storeCommand,
};

/** Runs the CLI and returns the exit code; never calls process.exit. */
export async function main(argv: readonly string[], io: Io): Promise<number> {
  const state: CliState = { json: false };
  const program = new Command('profile-snapshot')
    .description('Pre-render the public profile API from the profile store (SQLite) as static JSON files for a CDN.')
    .version(TOOL_VERSION)
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();

  try {
    // The CLI owns its process: a build may tune its V8 and collect when it should (core/memory.ts).
    applyMemoryUpkeep(io.env);
    // The first word that is not an option names the command; only that one is loaded. Anything else
    // (no command, `help`, a typo) loads them all, for the full help or commander's suggestion.
    const named = argv.find((arg) => !arg.startsWith('-'));
    const wanted = named !== undefined && Object.hasOwn(COMMANDS, named) ? [named] : Object.keys(COMMANDS);
    for (const name of wanted) {
      const command = (await COMMANDS[name]!())(io, state);
      program.addCommand(
        command
          .exitOverride()
          .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
          .showHelpAfterError('(run with --help for usage)'),
      );
    }
    await program.parseAsync(argv as string[], { from: 'user' });
    return ExitCode.ok;
  } catch (error) {
    return exitCodeFor(error, io, state);
  }
}

/** The one exit point: expected failures get their code and one line; anything else is a bug. */
function exitCodeFor(error: unknown, io: Io, state: CliState): number {
  if (error instanceof CommanderError) {
    if (['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(error.code)) return ExitCode.ok;
    return ExitCode.usage; // commander has already said what was wrong
  }
  const report = reportOf(error);
  if (report.kind === 'bug') {
    io.stderr.write(`profile-snapshot: ${report.message}${report.stack === undefined ? '' : `\n${report.stack}`}\n`);
    return report.exitCode;
  }
  if (error instanceof StrictWarningsError) io.stderr.write(formatWarnings(error.warnings));
  io.stderr.write(`profile-snapshot: ${report.message}${report.hint ? `. Fix: ${report.hint}.` : ''}\n`);
  if (state.json) {
    const warnings = error instanceof StrictWarningsError ? error.warnings : undefined;
    const { kind, exitCode, message, hint } = report;
    io.stdout.write(`${JSON.stringify({ error: { kind, exitCode, message, hint }, warnings }, null, 2)}\n`);
  }
  return report.exitCode;
}
