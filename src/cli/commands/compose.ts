/** `profile-snapshot compose`: joins a sharded prefix's creators list in the bucket, from every shard's part. */
import { Command, Option } from 'commander';
import { usageError } from '../../core/errors.js';
import { count } from '../../core/text.js';
import { compose, type ComposeReport } from '../../publish/compose-command.js';
import type { CliState, Io } from '../io.js';
import { parseNumber } from '../numbers.js';
import { addRemoteOptions, REMOTE_ENV_HELP, resolveLease, resolveRemoteOptions, type RemoteFlags } from '../remote-options.js';

interface ComposeFlags extends RemoteFlags {
  to?: string;
  shards?: string;
  json: boolean;
}

export function composeCommand(io: Io, state: CliState): Command {
  return addRemoteOptions(
    new Command('compose')
      .description(
        "Join the creators list of a sharded prefix (shards published with publish --shard i/n) from every shard's part, " +
          'server-side (UploadPartCopy): the list and its gzip variant. Each shard publish already does this after writing its part; ' +
          'run it as the last step of a cold publish of every shard, to fail clearly when a shard is missing. ' +
          'Nothing is written while a shard has no part yet, or when the live list already holds every current part.',
      )
      .addOption(new Option('--to <s3-url>', 's3://<bucket>[/<prefix>] [env: PROFILE_PUBLISH_TO]'))
      .addOption(new Option('--shards <n>', 'the shard count the prefix must have (default: as its first shard laid it out)')),
  )
    .option('--json', 'print the report as JSON on stdout', false)
    .addHelpText(
      'after',
      `${REMOTE_ENV_HELP}
Exit codes:
  0 joined, or already holding every part   2 usage error   6 the bucket is unusable
  8 another composer holds the prefix (transient: retry)   9 the prefix has another shard count
  10 not a sharded prefix   11 a shard published no part yet (the live list was left as it is)
  1 a bug in profile-snapshot
`,
    )
    .action(async (flags: ComposeFlags) => {
      state.json = flags.json;
      const to = flags.to ?? io.env.PROFILE_PUBLISH_TO;
      if (to === undefined || to === '')
        throw usageError('no bucket to compose in', 'pass --to s3://<bucket>[/<prefix>] or set PROFILE_PUBLISH_TO');
      const remote = resolveRemoteOptions(to, flags.to !== undefined ? '--to' : 'PROFILE_PUBLISH_TO', flags, io);
      const shards =
        flags.shards === undefined
          ? undefined
          : parseNumber(flags.shards, '--shards', { expected: 'a whole number from 1 to 1024', positive: true, max: 1024 });
      const report = await compose({ remote, shards, ...resolveLease(flags) });
      io.stderr.write(`${formatComposeSummary(report)}\n`);
      if (flags.json) io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    });
}

/** e.g. "profile-snapshot: joined the creators list of s3://b/p from 4 shards: 8 parts copied, 2 uploaded (1.2 kB); 19 requests; 0.31 s" */
export function formatComposeSummary(report: ComposeReport): string {
  const requests = Object.values(report.requests).reduce((a, b) => a + b, 0);
  const cost = `${count(requests)} requests; ${report.seconds.toFixed(2)} s`;
  if (report.superseded)
    return `profile-snapshot: another composer joined the creators list of ${report.where} while this one did; its join stands, this one was dropped; ${cost}`;
  if (!report.joined)
    return `profile-snapshot: the creators list of ${report.where} already holds every part of its ${report.shards} shards; ${cost}`;
  return `profile-snapshot: joined the creators list of ${report.where} from ${report.shards} shards: ${count(report.copiedParts)} parts copied, ${count(report.uploadedParts)} uploaded (${count(report.uploadedBytes)} bytes); ${cost}`;
}
