/**
 * `npm run bench` must keep working: it is how issue 5's targets are checked, and nothing else runs
 * it. This runs the real script, small (500 users, tmpfs only), into temp folders and a temp report,
 * and checks that every scenario is measured and printed with its ratio to the floor, and that the
 * report keeps the load section `npm run load` wrote. It asserts no timing: benchmarks print figures,
 * tests check that they are there.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { ensureCompiled, ROOT } from '../watch/helpers.js';

const SCENARIOS = [
  'floor', 'floor, async writes', 'cold build', 'no-change build', 'no-change build, --full', '1% changed build', '10% changed build',
  'watch cycle, idle', 'watch cycle, 1% changed', 'watch cycle, quiet, wall clock',
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
  writeFileSync(report, 'old\n<!-- load:start -->\nload figures\n<!-- load:end -->\n');
  const run = spawnSync(process.execPath, [join(ROOT, 'scripts/bench.mjs'), '--sizes', '500', '--no-disk',
    '--tmpfs-dir', join(temp('/dev/shm'), 'bench'), '--store-dir', join(work, 'stores'), '--report', report], { encoding: 'utf8', timeout: 170_000 });
  expect(run.status, run.stderr).toBe(0);
  for (const scenario of SCENARIOS) {
    const line = run.stdout.split('\n').find((l) => new RegExp(`^\\s+500 tmpfs ${scenario.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s+\\d`).test(l));
    expect(line, `${scenario} in\n${run.stdout}`).toBeDefined();
    if (scenario !== 'floor') expect(line, scenario).toMatch(/\d+\.\d\dx floor/);
  }
  const written = readFileSync(report, 'utf8');
  for (const scenario of SCENARIOS) expect(written).toContain(`| 500 | tmpfs | ${scenario} |`);
  expect(written).toMatch(/^Machine: \d+ x /m);
  // The cold build wrote every file of the tree (two aliases per profile, the list, errors, contract).
  const cold = /\| 500 \| tmpfs \| cold build \| [\d.]+ \| [\d.]+x \| (\d+) \| (\d+) \|/.exec(written);
  expect(cold, written).not.toBeNull();
  expect(Number(cold![1])).toBeGreaterThan(2 * 350);
  // The floor and the cold build ran three times each; the report lists every run.
  expect(written).toMatch(/^- 500 users, tmpfs: floor [\d.]+, [\d.]+, [\d.]+ s; cold build [\d.]+, [\d.]+, [\d.]+ s$/m);
  expect(written).toContain('<!-- load:start -->\nload figures\n<!-- load:end -->');
  expect(written).not.toContain('old\n');
}, 180_000);
