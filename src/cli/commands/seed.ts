/** `profile-snapshot seed`: a deterministic synthetic store, for benchmarks and trying things out. */
import { Command } from 'commander';
import { wholeNumber } from '../numbers.js';
import { seedStore } from '../../seed/synthetic.js';
import type { CliState, Io } from '../io.js';
import { ProgressLine } from '../report.js';
import { count } from '../../core/text.js';

interface SeedFlags {
  db: string;
  users: string;
  seed: string;
  force?: boolean;
}

export function seedCommand(io: Io, _state: CliState): Command {
  return new Command('seed')
    .description(
      'Write a deterministic synthetic profile store to the contract (about 80% active, 8% suspended or banned, 12% inactive or deleted; socials, badges, decorations, Unicode bios). Refuses to overwrite an existing file without --force.',
    )
    .requiredOption('--db <file>', 'the SQLite file to create')
    .requiredOption('--users <n>', 'number of users')
    .option('--seed <s>', 'random seed: the same seed and size give the same store', '1')
    .option('--force', 'replace an existing file')
    .action((flags: SeedFlags) => {
      const progress = new ProgressLine(io.stderr);
      try {
        const report = seedStore({
          db: flags.db,
          users: wholeNumber(flags.users, '--users'),
          seed: wholeNumber(flags.seed, '--seed'),
          force: Boolean(flags.force),
          onProgress: (n) => progress.update(`wrote ${count(n)} users`),
        });
        progress.clear();
        io.stderr.write(
          `profile-snapshot: seeded ${report.db}: ${count(report.users)} users, ${count(report.socials)} socials, ${count(report.badges)} badges, ${count(report.bans)} bans; ${report.seconds.toFixed(2)} s\n`,
        );
      } finally {
        progress.clear();
      }
    });
}
