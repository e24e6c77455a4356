/**
 * Summarizes a V8 CPU profile (`node --cpu-prof`): the functions with the most self time, and the
 * packages / files that time falls in, e.g. to see what a publish spends its core on.
 *
 *   node scripts/cpu-prof-summary.mjs <file.cpuprofile> [--top 30]
 */
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--'));
const top = Number(args.includes('--top') ? args[args.indexOf('--top') + 1] : '30');
const profile = JSON.parse(readFileSync(file, 'utf8'));

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfUs = new Map();
const deltas = profile.timeDeltas;
for (let i = 0; i < profile.samples.length; i++) selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + (deltas[i] ?? 0));
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

const where = (frame) => {
  const url = frame.url.replace(/^file:\/\//, '');
  const nm = url.lastIndexOf('node_modules/');
  if (nm !== -1) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) return url;
  if (url === '') return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  return url.replace(/^.*\/build\//, 'build/');
};

const functions = new Map();
const packages = new Map();
for (const [id, us] of selfUs) {
  const { callFrame } = byId.get(id);
  const name = `${callFrame.functionName || '(anonymous)'} ${where(callFrame)}:${callFrame.lineNumber + 1}`;
  functions.set(name, (functions.get(name) ?? 0) + us);
  const pkg = where(callFrame);
  packages.set(pkg, (packages.get(pkg) ?? 0) + us);
}

const pct = (us) => `${((us / total) * 100).toFixed(1)}%`.padStart(6);
const ms = (us) => `${(us / 1000).toFixed(0)} ms`.padStart(10);
console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled`);
console.log(`\ntop ${top} functions by self time:`);
for (const [name, us] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${ms(us)} ${pct(us)}  ${name}`);
console.log('\nself time by package / file:');
for (const [name, us] of [...packages].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${ms(us)} ${pct(us)}  ${name}`);

// Inclusive time of a few interesting frames (by function name), counted once per sample.
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
const inclusive = new Map();
for (const [id, us] of selfUs) {
  const seen = new Set();
  for (let n = id; n !== undefined; n = parent.get(n)) {
    const { callFrame } = byId.get(n);
    const name = `${callFrame.functionName || '(anonymous)'} ${where(callFrame)}`;
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + us);
  }
}
console.log('\ntop inclusive (total) time:');
for (const [name, us] of [...inclusive]
  .sort((a, b) => b[1] - a[1])
  .filter(([n]) => !n.startsWith('(root)'))
  .slice(0, top))
  console.log(`${ms(us)} ${pct(us)}  ${name}`);
