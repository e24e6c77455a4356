/**
 * `profile-snapshot publish`: uploads the built tree to an S3 bucket (AWS S3, R2, GCS, MinIO), only
 * what changed since the last publish, in an order that never shows readers a broken API.
 */
import { Command, Option } from 'commander';
import { wholeNumber } from '../numbers.js';
import { listBehindError, usageError } from '../../core/errors.js';
import { count } from '../../core/text.js';
import { DEFAULT_COMMIT_WAIT_MS } from '../../output/settled.js';
import { publish } from '../../publish/publish.js';
import type { PublishReport } from '../../publish/report.js';
import type { CliState, Io } from '../io.js';
import { outDirOption, outOption, shardFromFlags, shardOption } from '../options.js';
import {
  addRemoteOptions,
  REMOTE_ENV_HELP,
  resolveGuard,
  resolveCheckpoints,
  resolveLease,
  resolveRemoteOptions,
  type RemoteFlags,
} from '../remote-options.js';
import { formatPublishSummary, ProgressLine } from '../report.js';

interface PublishFlags extends RemoteFlags {
  out?: string;
  to?: string;
  full: boolean;
  dryRun: boolean;
  json: boolean;
  wait: string;
  shard?: string;
}

export function publishCommand(io: Io, state: CliState): Command {
  return definePublish().action((flags: PublishFlags) => runPublish(flags, io, state));
}

/** The command's flags and help. */
function definePublish(): Command {
  return addRemoteOptions(
    new Command('publish')
      .description(
        'Upload the built snapshot to an S3 bucket (AWS S3, Cloudflare R2, Google Cloud Storage, MinIO) behind a CDN: ' +
          "only new and changed objects, each with the contract's Content-Type and Cache-Control; profiles before the creators list, " +
          'deletions last, so readers never see a list naming a missing profile. Compares with the state it keeps in the bucket ' +
          '(no listing); without one, lists the prefix and compares by content.',
      )
      .addOption(outOption('the built snapshot to publish'))
      .addOption(
        shardOption(
          "the shard the snapshot must be (a shard's tree is published as that shard whether or not this is given): its profiles, and its part of the creators list, which is then joined in the bucket",
        ),
      )
      .addOption(new Option('--to <s3-url>', 's3://<bucket>[/<prefix>] [env: PROFILE_PUBLISH_TO]')),
  )
    .option('--full', 'ignore the state kept in the bucket: list the prefix and compare every object by content', false)
    .option('--dry-run', 'decide and print what would change; write nothing', false)
    .option('--json', 'print the report (counts, requests by method) as JSON on stdout', false)
    .addOption(new Option('--wait <ms>', "how long to wait for a running build's commit to finish").default(String(DEFAULT_COMMIT_WAIT_MS)))
    .addHelpText(
      'after',
      `${REMOTE_ENV_HELP}

Exit codes:
  0 published, or nothing to do    2 usage error    5 out dir unusable or not publishable
  6 the bucket is unusable (unreachable, missing, access denied, retries exhausted)
  7 refused by the deletion guard (nothing changed)
  8 the prefix is held by another publisher (transient: retry)
  9 the prefix is split into another number of shards (the message names it)
  10 a shard published into a prefix of whole trees, or a whole tree into a sharded one
  12 the shard was published, but another composer held the creators list past --lock-timeout:
     the list does not hold its part yet (transient: publish again, or run compose)
  1 a bug in profile-snapshot
`,
    );
}

/** Publishes the tree, with a progress line on a terminal, then prints the summary. */
async function runPublish(flags: PublishFlags, io: Io, state: CliState): Promise<void> {
  state.json = flags.json;
  const to = flags.to ?? io.env.PROFILE_PUBLISH_TO;
  if (to === undefined || to === '')
    throw usageError('no bucket to publish to', 'pass --to s3://<bucket>[/<prefix>] or set PROFILE_PUBLISH_TO');
  const remote = resolveRemoteOptions(to, flags.to !== undefined ? '--to' : 'PROFILE_PUBLISH_TO', flags, io);
  const progress = new ProgressLine(io.stderr);
  let report: PublishReport;
  try {
    report = await publish({
      out: outDirOption(flags, io.env),
      remote,
      ...resolveGuard(flags),
      ...resolveLease(flags),
      ...resolveCheckpoints(io),
      full: flags.full,
      dryRun: flags.dryRun,
      waitMs: wholeNumber(flags.wait, '--wait'),
      shard: shardFromFlags(flags, io.env),
      onProgress: ({ phase, done, total }) =>
        // Formatted only when drawn: toLocaleString twice per object shows in a cold publish's CPU profile.
        progress.update(() =>
          phase === 'compare'
            ? `listed ${count(done)} of about ${count(total)} objects`
            : `${phase === 'upload' ? 'uploaded' : 'deleted'} ${count(done)} of ${count(total)} objects`,
        ),
    });
  } finally {
    progress.clear();
  }
  for (const notice of report.notices) io.stderr.write(`profile-snapshot: warning: ${notice}\n`);
  io.stderr.write(`${formatPublishSummary(report)}\n`);
  if (flags.json) io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  const behind = report.shard?.listBehind;
  if (behind !== undefined) {
    state.json = false; // the report on stdout already says it
    throw listBehindError(
      `shard ${report.shard!.shard} was published, but the creators list does not hold its part yet: ${behind}`,
      'publish the shard again, or run profile-snapshot compose, once the other composer is done (exit 12 is transient)',
    );
  }
}
