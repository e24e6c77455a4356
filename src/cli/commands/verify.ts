/**
 * `profile-snapshot verify`: the deploy gate. Audits a built tree and exits 0 when it may be
 * deployed, 5 (out dir unusable) with every defect listed when it must not be.
 */
import { Command, Option } from 'commander';
import { wholeNumber } from '../numbers.js';
import { DEFAULT_COMMIT_WAIT_MS } from '../../output/settled.js';
import { verify, VerifyFailedError, type VerifyReport } from '../../verify/index.js';
import type { CliState, Io } from '../io.js';
import { outDirOption, outOption, shardFromFlags, shardOption } from '../options.js';
import { count } from '../../core/text.js';

interface VerifyFlags {
  out?: string;
  netlify: boolean;
  root: string;
  json: boolean;
  wait: string;
  shard?: string;
}

export function verifyCommand(io: Io, state: CliState): Command {
  return new Command('verify')
    .description(
      'Audit a built snapshot before deploying it: every document parses and matches its JSON Schema (contract/openapi.json); ' +
        'both alias files of every profile exist and are identical; the creators list names only published, active profiles, each once, ' +
        'in lower-cased username order, and every active profile; no unpublishable username or misnamed file; the error documents and the ' +
        'contract are there; no leftover temporary or staging files and no bookkeeping where it would be served. Exit 0 when clean, ' +
        '5 with every defect listed when not.',
    )
    .addOption(outOption('the snapshot to audit'))
    .addOption(shardOption('the shard the snapshot must be'))
    .option('--netlify', "also check Netlify's limit of 54,000 files per folder and that netlify.toml matches the route table", false)
    .option('--root <dir>', 'repository root holding netlify.toml (with --netlify)', '.')
    .option('--json', 'print the report (every defect with kind, path and message) as JSON on stdout', false)
    .addOption(
      new Option('--wait <ms>', "how long to wait for a running build's commit to finish before auditing what is there").default(
        String(DEFAULT_COMMIT_WAIT_MS),
      ),
    )
    .addHelpText(
      'after',
      `
Exit codes:
  0 the snapshot may be deployed   5 it must not (defects listed), or the out dir cannot be read
  2 usage error                    1 a bug in profile-snapshot
`,
    )
    .action((flags: VerifyFlags) => {
      state.json = flags.json;
      const out = outDirOption(flags, io.env);
      const shard = shardFromFlags(flags, io.env);
      const report = verify(out, { netlify: flags.netlify, root: flags.root, waitMs: wholeNumber(flags.wait, '--wait'), shard });
      for (const warning of report.warnings) io.stderr.write(`profile-snapshot: warning: ${warning}\n`);
      if (flags.json) {
        io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      } else {
        for (const d of report.defects) io.stderr.write(`defect: ${d.kind}: ${d.path}: ${d.message}\n`);
      }
      io.stderr.write(`${formatVerifySummary(report)}\n`);
      // The JSON report is the machine answer, defects included: the exit point adds no second document.
      state.json = false;
      if (!report.ok) throw new VerifyFailedError(report);
    });
}

export function formatVerifySummary(report: VerifyReport): string {
  const what = `${count(report.profiles)} profiles, ${count(report.creators)} creators, ${count(report.files)} files`;
  const netlify = report.netlify ? ', Netlify checks included' : '';
  return report.ok
    ? `profile-snapshot: verified ${report.out}: no defects (${what}${netlify}); ${report.seconds.toFixed(2)} s`
    : `profile-snapshot: verify ${report.out}: ${count(report.defects.length)} defects (${what}${netlify}); ${report.seconds.toFixed(2)} s`;
}
