/**
 * What a publish's record costs at a million profiles: the state written (serializeState), read
 * back (parseState), and read back and planned against a tree with 1% of the hashes changed
 * (parseState, then planPublish: what a publish holds of the state until its plan is made), each in
 * a fresh process, as the peak RSS the step adds (VmHWM, reset just before it) and its time. Each
 * build writes its own state and reads the one it wrote; with `--baseline`, that build's turns
 * alternate with this one's and the report says their ratios.
 *
 *   npm run compile && node scripts/bench-record.mjs [--profiles 880196] [--runs 5] [--baseline <repo with build/>]
 *
 * The rows are like the seeded 1M store's published profiles (880,196 of them): names of up to 13
 * characters, in name order, and 16-character data hashes. Node 26 on: the setup's freed memory is
 * handed back through node:ffi (core/release-freed.ts), which older versions cannot do.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { releaseFreedMemory } from '../build/core/release-freed.js';
import { machine, median } from './bench-common.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);

const peakMb = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;

/** In the child: one step of one build, its figures as a JSON line. */
async function step(root, mode, file, profiles) {
  const format = await import(join(root, 'build/publish/record/format.js'));
  const table = await import(join(root, 'build/publish/plan/profile-table.js'));
  const { planPublish } = await import(join(root, 'build/publish/plan/plan.js'));
  let input, tree;
  if (mode === 'write') {
    const rows = new table.TableBuilder();
    const names = Array.from({ length: profiles }, (_, i) => `atlas-${(i * 7919).toString(36)}`).sort();
    for (const name of names) rows.add(name, randomBytes(12).toString('base64url'));
    input = rows.build();
  } else input = readFileSync(file);
  if (mode === 'plan') tree = { profiles: changedTree(format, table, input), files: new Map() };
  // What the setup freed is handed back first, or the step would reuse it unseen.
  globalThis.gc();
  releaseFreedMemory();
  writeFileSync('/proc/self/clear_refs', '5');
  const before = peakMb();
  const started = performance.now();
  if (mode === 'write') {
    const bytes = format.serializeState('bench', input, [['service-api/v1/creators', 'c1']], { tree: 'd', profiles, files: 1 });
    writeFileSync(file, bytes);
  } else {
    const { live } = format.parseState(input);
    if (live.profiles.size !== profiles) throw new Error('the state read back is not the one written');
    if (mode === 'plan' && planPublish(tree, live).profiles.length !== Math.ceil(profiles / 100))
      throw new Error('the plan is not 1% of the profiles');
  }
  const ms = performance.now() - started;
  process.stdout.write(`${JSON.stringify({ rise: peakMb() - before, ms })}\n`);
}

/** The state's rows as a tree's table, every hundredth hash changed. */
function changedTree(format, { TableBuilder, tableOf }, input) {
  const rows = new TableBuilder();
  let row = 0;
  for (const [name, hash] of tableOf(format.parseState(input).live.profiles)) rows.add(name, row++ % 100 === 0 ? `changed-${hash}` : hash);
  return rows.build();
}

if (args[0] === '--step') {
  await step(args[1], args[2], args[3], Number(args[4]));
} else {
  const profiles = Number(value('--profiles', '880196'));
  const runs = Number(value('--runs', '5'));
  const baseline = value('--baseline', undefined);
  const commitOf = (root) => {
    try {
      return execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    } catch {
      return 'another build';
    }
  };
  const builds = [
    { name: 'this commit', root: repo },
    ...(baseline ? [{ name: commitOf(resolve(baseline)), root: resolve(baseline) }] : []),
  ];
  const work = mkdtempSync(join(tmpdir(), 'ps-bench-record-'));
  const figures = new Map(builds.map((build) => [build.name, { write: [], read: [], plan: [] }]));
  try {
    for (let run = 1; run <= runs; run++) {
      for (const build of builds) {
        const file = join(work, `state-${builds.indexOf(build)}`);
        for (const mode of ['write', 'read', 'plan']) {
          const line = execFileSync(process.execPath, [
            '--expose-gc',
            fileURLToPath(import.meta.url),
            '--step',
            build.root,
            mode,
            file,
            String(profiles),
          ]);
          figures.get(build.name)[mode].push(JSON.parse(String(line)));
        }
      }
      process.stderr.write(`[bench-record] run ${run} of ${runs}\n`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const cell = (list, key, digits) => median(list.map((entry) => entry[key])).toFixed(digits);
  const rows = builds.flatMap((build) =>
    ['write', 'read', 'plan'].map((mode) => {
      const list = figures.get(build.name)[mode];
      return `| ${build.name} | ${mode} | ${cell(list, 'rise', 1)} MB | ${cell(list, 'ms', 0)} ms |`;
    }),
  );
  if (baseline) {
    for (const mode of ['write', 'read', 'plan']) {
      const [a, b] = builds.map((build) => figures.get(build.name)[mode]);
      const ratio = (key) => (median(a.map((e) => e[key])) / median(b.map((e) => e[key]))).toFixed(2);
      rows.push(`| this / baseline | ${mode} | ${ratio('rise')}x | ${ratio('ms')}x |`);
    }
  }
  process.stdout.write(
    [
      `\`node scripts/bench-record.mjs --profiles ${profiles} --runs ${runs}${baseline ? ' --baseline ...' : ''}\`: ${machine()}; a state of ${profiles.toLocaleString('en')} profiles written, read back, and read back and planned against a tree with 1% of the hashes changed, each step in a fresh process; the peak RSS it adds and its time, medians of ${runs}.`,
      '',
      '| build | step | peak RSS added | time |',
      '|---|---|---:|---:|',
      ...rows,
      '',
    ].join('\n'),
  );
}
