// Sums a TEST_CPU_REPORT file (test/cpu-usage.ts): the files by CPU, most first, and the whole run's
// CPU against the cores it had, the floor of the suite's wall time. `npm run test:cpu -- <report> [top]`.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

const [report, top = '20'] = process.argv.slice(2);
if (!report) {
  console.error('usage: TEST_CPU_REPORT=<report> npx vitest run; then npm run test:cpu -- <report> [how many files]');
  process.exit(2);
}
const rows = readFileSync(report, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => {
    const [file, wall, own, children] = line.split('\t');
    return { file, wall: Number(wall), own: Number(own), children: Number(children), cpu: Number(own) + Number(children) };
  })
  .sort((a, b) => b.cpu - a.cpu);
const seconds = (n) => `${n.toFixed(1)} s`.padStart(9);
console.log(`${'CPU'.padStart(9)}${'own'.padStart(9)}${'children'.padStart(10)}${'wall'.padStart(9)}  file`);
for (const row of rows.slice(0, Number(top))) {
  console.log(`${seconds(row.cpu)}${seconds(row.own)} ${seconds(row.children)}${seconds(row.wall)}  ${row.file}`);
}
const sum = (key) => rows.reduce((total, row) => total + row[key], 0);
const cores = availableParallelism();
console.log(
  `${rows.length} files: ${sum('cpu').toFixed(0)} s of CPU, ${sum('wall').toFixed(0)} s of file time; ` +
    `on ${cores} cores the whole run cannot take less than ${(sum('cpu') / cores).toFixed(0)} s`,
);
