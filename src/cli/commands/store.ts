/**
 * `profile-snapshot store track` / `store untrack`: install or remove the change clock (see
 * store/clock-install.ts), the only writes this tool makes to a profile store.
 */
import { Command, Option } from 'commander';
import { installSql, trackStore, untrackStore, type TrackReport } from '../../store/clock-install.js';
import { storeError } from '../../core/errors.js';
import type { CliState, Io } from '../io.js';
import { wholeNumber } from '../numbers.js';

interface StoreFlags {
  db?: string;
  busyTimeout: string;
  printSql?: boolean;
  json?: boolean;
}

const TRACK_HELP = `
Installs, in one transaction, a few tables and triggers named profile_snapshot_* that record which
users changed in a way the API can see: inserts, deletes and updates of users' published columns
(never the private ones), every change of socials, badges and bans, and edits of decorations. Cycles
of \`watch\` then read only what changed instead of comparing the whole store. Run it where the store
is written (the primary; LiteFS or Litestream replicate the clock with the data). Idempotent: an
identical clock is left alone. It costs the platform one indexed upsert per changed row, inside its
own transactions (see docs/change-clock.md for the figures). --print-sql shows every statement for
this store without running any.`;

export function storeCommand(io: Io, state: CliState): Command {
  const store = new Command('store').description(
    'Install or remove the change clock in the profile store (the only writes this tool makes to it).',
  );
  store.addCommand(
    withStoreOptions(new Command('track'))
      .description('Install the change clock: cycles then cost what changed, not the whole store.')
      .option('--print-sql', 'print the SQL it would run on this store, and change nothing', false)
      .addHelpText('after', TRACK_HELP)
      .action((flags: StoreFlags) => {
        const db = dbOf(flags, io);
        if (flags.printSql) return void io.stdout.write(`${installSql(db)}\n`);
        report(
          io,
          state,
          flags,
          trackStore(db, { busyTimeoutMs: busyTimeout(flags) }),
          'installed the change clock in',
          'the change clock is already installed in',
        );
      }),
  );
  store.addCommand(
    withStoreOptions(new Command('untrack'))
      .description('Remove every table and trigger of the change clock, in one transaction; cycles compare the whole store again.')
      .action((flags: StoreFlags) => {
        report(
          io,
          state,
          flags,
          untrackStore(dbOf(flags, io), { busyTimeoutMs: busyTimeout(flags) }),
          'removed the change clock from',
          'there is no change clock in',
        );
      }),
  );
  return store;
}

function withStoreOptions(command: Command): Command {
  return command
    .addOption(new Option('--db <file>', 'the profile store, where it is written (its primary) [env: PROFILE_DB]'))
    .addOption(new Option('--busy-timeout <ms>', "how long to wait for the platform's writers").default('5000'))
    .option('--json', 'print the result as JSON on stdout', false);
}

function dbOf(flags: StoreFlags, io: Io): string {
  const db = flags.db ?? io.env.PROFILE_DB;
  if (db === undefined || db === '') throw storeError('no profile store named', 'pass --db <file> or set PROFILE_DB');
  return db;
}

const busyTimeout = (flags: StoreFlags) => wholeNumber(flags.busyTimeout, '--busy-timeout');

function report(io: Io, state: CliState, flags: StoreFlags, result: TrackReport, did: string, nothing: string): void {
  state.json = Boolean(flags.json);
  if (state.json) io.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  const epoch = result.epoch === undefined ? '' : ` (epoch ${result.epoch}, ${result.triggers} triggers)`;
  io.stderr.write(`profile-snapshot: ${result.changed ? did : nothing} ${result.db}${epoch}\n`);
}
