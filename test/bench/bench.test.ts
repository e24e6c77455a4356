/**
 * `npm run bench` must keep working: it is how issue 5's targets are checked, and nothing else runs
 * it. This runs the real script, small (500 users, tmpfs only), into temp folders and a temp report,
 * and checks that every scenario is measured and printed with its ratio to the floor, and that the
 * report keeps the sections other scripts wrote, whatever their names. It asserts no timing: benchmarks print figures,
 * tests check that they are there.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { ensureCompiled, REPO } from '../watch/helpers.js';

const SCENARIOS = [
  'floor',
  'floor, async writes',
  'cold build',
  'no-change build',
  'no-change build, --full',
  '1% changed build',
  '10% changed build',
  '1% changed build, store just written',
  'no-change build after that',
  'watch cycle, idle',
  'watch cycle, 1% changed',
  'watch cycle, quiet, wall clock',
];

const made: string[] = [];
const temp = (parent: string) => {
  const dir = mkdtempSync(join(parent, 'ps-bench-'));
  made.push(dir);
  return dir;
};
beforeAll(() => ensureCompiled(), 120_000);
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

it('runs every scenario small, prints each with its ratio to the floor, and writes the report', () => {
  expect(existsSync('/dev/shm'), 'the bench measures on tmpfs at /dev/shm').toBe(true);
  const work = temp(tmpdir());
  const report = join(work, 'BENCHMARKS.md');
  const others = '<!-- load:start -->\nload figures\n<!-- load:end -->\n\n<!-- gzip:start -->\ngzip figures\n<!-- gzip:end -->';
  writeFileSync(report, `old\n${others}\n`);
  const run = spawnSync(
    process.execPath,
    [
      join(REPO, 'scripts/bench.mjs'),
      '--sizes',
      '500',
      '--no-disk',
      '--no-publish',
      '--no-serve',
      '--tmpfs-dir',
      join(temp('/dev/shm'), 'bench'),
      '--store-dir',
      join(work, 'stores'),
      '--report',
      report,
    ],
    { encoding: 'utf8', timeout: 170_000 },
  );
  expect(run.status, run.stderr).toBe(0);
  for (const scenario of SCENARIOS) {
    const line = run.stdout
      .split('\n')
      .find((l) => new RegExp(`^\\s+500 tmpfs ${scenario.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s+\\d`).test(l));
    expect(line, `${scenario} in\n${run.stdout}`).toBeDefined();
    if (scenario !== 'floor') expect(line, scenario).toMatch(/\d+\.\d\dx floor/);
  }
  const written = readFileSync(report, 'utf8');
  for (const scenario of SCENARIOS) expect(written).toContain(`| 500 | tmpfs | ${scenario} |`);
  expect(written).toMatch(/^Machine: \d+ x /m);
  // The cold build wrote every file of the tree (two aliases per profile, the list, errors, contract),
  // and the floor as many: it writes the same tree (the bench checks files, bytes and hard links).
  const figures = (scenario: string) =>
    new RegExp(`\\| 500 \\| tmpfs \\| ${scenario} \\| [\\d.]+ \\| [\\d.]+x \\| ([\\d.]+) \\| ([\\d.]+) \\| (\\d+) \\|`).exec(written);
  const cold = figures('cold build');
  expect(cold, written).not.toBeNull();
  expect(Number(cold![3])).toBeGreaterThan(2 * 350);
  // User and system CPU beside the wall time, for the build and the floor alike.
  expect(Number(cold![1]) + Number(cold![2])).toBeGreaterThan(0);
  const floor = figures('floor');
  expect(floor, written).not.toBeNull();
  expect(Number(floor![1]) + Number(floor![2])).toBeGreaterThan(0);
  expect(Number(floor![3])).toBe(Number(cold![3]));
  // The floor and the cold build ran five times each, interleaved; the report lists every run.
  const five = Array(5).fill('[\\d.]+').join(', ');
  expect(written).toMatch(new RegExp(`^- 500 users, tmpfs: floor ${five} s; cold build ${five} s$`, 'm'));
  expect(written).toContain(others);
  expect(written).not.toContain('old\n');
}, 180_000);
