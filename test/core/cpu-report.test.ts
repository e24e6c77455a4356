/**
 * The suite's CPU report (docs/testing.md): a real vitest run of one small file with
 * TEST_CPU_REPORT set writes that file's line, and `npm run test:cpu` sorts the lines by CPU and
 * prints the run's floor on this machine's cores.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const root = new URL('../..', import.meta.url).pathname;
let dir = '';
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the per-file CPU report', () => {
  it("writes a line per file of a vitest run: its wall time, its own and its children's CPU", () => {
    dir = mkdtempSync(join(tmpdir(), 'ps-cpu-report-'));
    const report = join(dir, 'cpu.tsv');
    const run = spawnSync(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', 'test/core/slice.test.ts'], {
      cwd: root,
      env: { ...process.env, TEST_CPU_REPORT: report },
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);
    const lines = readFileSync(report, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(1);
    const [file, ...seconds] = lines[0]!.split('\t');
    expect(file).toBe('test/core/slice.test.ts');
    expect(seconds.map(Number).every((n) => Number.isFinite(n) && n >= 0)).toBe(true);
  });

  it('sorts the files by CPU and prints the floor over the cores', () => {
    dir = mkdtempSync(join(tmpdir(), 'ps-cpu-report-'));
    const report = join(dir, 'cpu.tsv');
    writeFileSync(report, 'test/a.test.ts\t10.0\t1.0\t2.0\ntest/b.test.ts\t20.0\t5.0\t15.0\n');
    const run = spawnSync(process.execPath, ['test/cpu-summary.mjs', report], { cwd: root, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines[1]).toMatch(/^\s+20\.0 s\s+5\.0 s\s+15\.0 s\s+20\.0 s {2}test\/b\.test\.ts$/);
    expect(lines[2]).toMatch(/test\/a\.test\.ts$/);
    expect(lines.at(-1)).toBe(
      `2 files: 23 s of CPU, 30 s of file time; on ${availableParallelism()} cores the whole run cannot take less than ${(23 / availableParallelism()).toFixed(0)} s`,
    );
  });
});
