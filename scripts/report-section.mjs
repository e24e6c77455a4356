// BENCHMARKS.md holds sections written by different scripts, each between `<!-- name:start -->` and
// `<!-- name:end -->`: a script replaces its own section (or appends it) and leaves the rest alone.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

/** Writes `section` (markers included) over the file's section `name`, or appends it. */
export function writeSection(file, name, section) {
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const open = `<!-- ${name}:start -->`,
    close = `<!-- ${name}:end -->`;
  const start = current.indexOf(open);
  const end = current.indexOf(close);
  const next =
    start !== -1 && end > start
      ? current.slice(0, start) + section + current.slice(end + close.length)
      : `${current.replace(/\n*$/, '')}${current ? '\n\n' : ''}${section}\n`;
  writeFileSync(file, next);
}
