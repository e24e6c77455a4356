// The compile step's second half: src/'s plain JavaScript modules (and their hand-written .d.ts)
// go to build/ byte for byte. tsc would reprint them, and the hosting generators embed their text.
import { cpSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
for (const file of readdirSync(join(repo, 'src'), { recursive: true, encoding: 'utf8' })) {
  if (file.endsWith('.js') || file.endsWith('.d.ts')) cpSync(join(repo, 'src', file), join(repo, 'build', file));
}
