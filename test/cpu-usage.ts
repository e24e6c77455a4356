/**
 * Where the suite's time goes, per file: with TEST_CPU_REPORT=<file> set (vitest.config.ts loads
 * this file only then), each test file appends one tab-separated line to it when it ends: the file,
 * its wall seconds, and the CPU seconds of its worker process and of the processes it started and
 * waited for (moto_server, the CLI's runs).
 * Vitest starts a fresh worker for each file, so the counts are the file's own. They come from
 * /proc/self/stat (Linux): a child still running when the file ends is not counted.
 * `npm run test:cpu -- <file>` sums them (test/cpu-summary.mjs).
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { afterAll, expect } from 'vitest';

const report = process.env.TEST_CPU_REPORT;
const startedAt = Date.now();

/** utime, stime, cutime and cstime of this process, in seconds (fields 14-17 of /proc/self/stat, in Linux's USER_HZ of 1/100 s). */
function cpuSeconds(): { own: number; children: number } {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  const seconds = (index: number) => Number(fields[index]) / 100;
  return { own: seconds(11) + seconds(12), children: seconds(13) + seconds(14) };
}

afterAll(() => {
  const file = relative(process.cwd(), expect.getState().testPath ?? 'unknown');
  const { own, children } = cpuSeconds();
  const wall = (Date.now() - startedAt) / 1000;
  appendFileSync(report!, `${file}\t${wall.toFixed(1)}\t${own.toFixed(1)}\t${children.toFixed(1)}\n`);
});
