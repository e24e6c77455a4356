// Rewrites test/durations.json, the order test/sequencer.ts starts files in, from a JSON report of a
// whole run: `npx vitest run --reporter=default --reporter=json --outputFile=<report>`, then
// `npm run test:durations -- <report>`. Seconds per file, rounded; files the report lacks keep theirs.
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';

const [report] = process.argv.slice(2);
if (!report) {
  console.error('usage: npm run test:durations -- <vitest JSON report of a whole run>');
  process.exit(2);
}
const root = new URL('..', import.meta.url).pathname;
const file = new URL('./durations.json', import.meta.url);
const durations = JSON.parse(readFileSync(file, 'utf8'));
for (const result of JSON.parse(readFileSync(report, 'utf8')).testResults)
  durations[relative(root, result.name)] = Math.round((result.endTime - result.startTime) / 100) / 10;
const sorted = Object.fromEntries(Object.entries(durations).sort(([a, x], [b, y]) => y - x || a.localeCompare(b)));
writeFileSync(file, `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`${Object.keys(sorted).length} files in ${relative(process.cwd(), file.pathname)}`);
